import { BaseError } from '../errors/base.js'
import { SignInRejectedError } from './actions.js'
import type { SignInAdapter, SignInSession } from './store.js'

/**
 * The sign-in adapter for @latchkey/server: `GET /auth/nonce`, `POST /auth/siwe`, `GET
 * /auth/session`, `POST /auth/signout`, with the backend's httpOnly cookies.
 *
 * @example
 * const client = createClient({ chains, signIn: serverAdapter('http://localhost:8787') })
 */
export function serverAdapter(url: string, fetchFn: typeof fetch = (...args) => globalThis.fetch(...args)): SignInAdapter {
  const base = url.replace(/\/+$/, '')
  async function call<result>(path: string, init: RequestInit = {}): Promise<result> {
    let response: Response
    try {
      response = await fetchFn(`${base}${path}`, { credentials: 'include', ...init })
    } catch (error) {
      throw new BaseError('The sign-in server is unreachable.', { cause: error })
    }
    if (response.status === 204) return undefined as result
    const json = (await response.json().catch(() => undefined)) as { error?: { code?: string; message?: string } } | undefined
    if (!response.ok) throw new SignInRejectedError({ details: json?.error?.message ?? `${response.status} ${response.statusText}` })
    return json as result
  }
  return {
    getNonce: async () => (await call<{ nonce: string }>('/auth/nonce')).nonce,
    verify: ({ message, signature, walletKind }) =>
      call<SignInSession>('/auth/siwe', {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ message, signature, walletKind }),
      }),
    async getSession() {
      try {
        return await call<SignInSession>('/auth/session')
      } catch {
        return null
      }
    },
    signOut: () => call<void>('/auth/signout', { method: 'POST' }),
  }
}
