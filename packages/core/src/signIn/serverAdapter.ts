import { BaseError } from '../errors/base.js'
import { SignInRejectedError } from './errors.js'
import type { SignInAdapter, SignInSession } from './store.js'

/**
 * The sign-in adapter for @latchkey/server: `GET /auth/nonce`, `POST /auth/siwe` (and `/auth/cacao`), `GET
 * /auth/session`, `POST /auth/signout`, with the backend's httpOnly cookies. `getSession` answers
 * null when signed out and throws when the backend cannot be reached (the client then stays
 * signed out).
 *
 * @example
 * const client = createClient({ chains, signIn: serverAdapter('http://localhost:8787') })
 */
export function serverAdapter(url: string, fetchFn: typeof fetch = (...args) => globalThis.fetch(...args)): SignInAdapter {
  const base = url.replace(/\/+$/, '')
  async function send(path: string, init: RequestInit = {}): Promise<Response> {
    try {
      return await fetchFn(`${base}${path}`, { credentials: 'include', ...init })
    } catch (error) {
      throw new BaseError('The sign-in server is unreachable.', { cause: error })
    }
  }
  async function read<result>(response: Response): Promise<result> {
    if (response.status === 204) return undefined as result
    const json = (await response.json().catch(() => undefined)) as { error?: { code?: string; message?: string } } | undefined
    if (!response.ok) throw new SignInRejectedError({ details: json?.error?.message ?? `${response.status} ${response.statusText}` })
    return json as result
  }
  const call = async <result>(path: string, init?: RequestInit) => read<result>(await send(path, init))
  return {
    getNonce: async () => (await call<{ nonce: string }>('/auth/nonce')).nonce,
    verify: ({ message, signature, walletKind }) =>
      call<SignInSession>('/auth/siwe', {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ message, signature, walletKind }),
      }),
    verifyCacao: ({ cacao, walletKind }) =>
      call<SignInSession>('/auth/cacao', {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ cacao, walletKind }),
      }),
    // Signed out is 200 `null` (no failed request in the console); backends before it answered 401.
    async getSession() {
      const response = await send('/auth/session')
      if (response.status === 401) return null
      return (await read<SignInSession | null>(response)) ?? null
    },
    // JSON, like every POST: the backend refuses other types (a cross-site form could send them).
    signOut: () => call<void>('/auth/signout', { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' }),
  }
}
