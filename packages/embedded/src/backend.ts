import { AccountAlreadyLinkedError, CannotProceedError, InvalidCodeError, LastLoginError } from './errors.js'

/** What the app backend (@latchkey/server) tells the browser about the key-management service. */
export type BackendConfig = {
  organizationId: string
  kmsUrl: string
  framesUrl?: string | undefined
  /**
   * The social sign-ins the backend accepts: the app's client id and where each starts. A provider
   * that answers with `response_mode=form_post` (Apple) posts to the backend's `redirectUri`,
   * which sends the browser on to the app's callback page.
   */
  oauth?:
    | Partial<
        Record<
          'google' | 'apple',
          { clientId: string; authorizationEndpoint: string; responseMode?: 'query' | 'form_post' | undefined; redirectUri?: string | undefined }
        >
      >
    | undefined
}

/** The signed-in user, as the backend answers sign-in routes. */
export type BackendAccount = { organizationId: string; userId: string; address: string }

/**
 * The app backend's auth routes, with the session cookie (`credentials: 'include'`). Its refusals
 * become catalogue errors: a wrong or expired code is `InvalidCodeError`, a login of another user
 * `AccountAlreadyLinkedError`, the last login's removal `LastLoginError`, anything else it refuses
 * `CannotProceedError` with the backend's own words as details.
 *
 * @example
 * const backend = createBackend('http://localhost:8787')
 * const { otpId } = await backend.post('/auth/email/start', { email })
 */
export function createBackend(baseUrl: string, fetchFn: typeof fetch = globalThis.fetch) {
  const base = baseUrl.replace(/\/+$/, '')
  async function request<result>(method: 'GET' | 'POST' | 'DELETE', path: string, body?: unknown): Promise<result> {
    let response: Response
    try {
      response = await fetchFn(`${base}${path}`, {
        method,
        credentials: 'include',
        // Every request that changes something says it is JSON (the backend refuses others: a form cannot send it).
        ...(method === 'GET' ? {} : { headers: { 'content-type': 'application/json' } }),
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      })
    } catch (error) {
      throw new CannotProceedError({ details: `The app backend at ${base} is unreachable`, cause: error })
    }
    if (response.status === 204) return undefined as result
    const json = (await response.json().catch(() => undefined)) as { error?: { code?: string; message?: string; kms?: unknown } } | undefined
    if (!response.ok) {
      const message = json?.error?.message ?? `${response.status} ${response.statusText}`
      const code = json?.error?.code ?? ''
      if (CODE_REFUSALS.has(code)) throw new InvalidCodeError({ details: message })
      if (code === 'account_already_linked') throw new AccountAlreadyLinkedError({ details: message })
      if (code === 'last_login') throw new LastLoginError({ details: message })
      throw new BackendError(response.status, code || 'unknown', message, kmsRefusal(json?.error?.kms))
    }
    return json as result
  }
  return {
    get: <result>(path: string) => request<result>('GET', path),
    post: <result>(path: string, body: unknown) => request<result>('POST', path, body),
    delete: <result>(path: string) => request<result>('DELETE', path),
  }
}

export type Backend = ReturnType<typeof createBackend>

/** The backend's codes for "this code will not do": not sent or spent, sent to another email, or refused by the kms. */
const CODE_REFUSALS = new Set(['unknown_code', 'invalid_code', 'email_mismatch'])

/** The kms's refusal of a body the user's consent frame stamped, which the backend carried and passes on. */
export type KmsRefusal = { code: number; message: string; details: unknown }

const kmsRefusal = (value: unknown): KmsRefusal | undefined => {
  const refusal = value as Partial<KmsRefusal> | undefined
  return typeof refusal?.code === 'number' && typeof refusal.message === 'string'
    ? { code: refusal.code, message: refusal.message, details: refusal.details ?? null }
    : undefined
}

/**
 * The backend refused: `status` and its `code`, the catalogue text with its message as details;
 * `kms`, the kms's own refusal when the backend carried a user-stamped activity to it.
 */
export class BackendError extends CannotProceedError {
  override name = 'BackendError'
  constructor(
    readonly status: number,
    readonly backendCode: string,
    message: string,
    readonly kms?: KmsRefusal,
  ) {
    super({ details: message })
  }
}
