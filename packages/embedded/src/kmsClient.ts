import type { TurnkeyClient as OfficialTurnkeyClient } from '@turnkey/http'
import type { Stamper } from './sessionKeys.js'

// The key-management API operations the browser uses, by the official client's method names, with
// the paths the official client posts to (kmsClient.test.ts checks both against `@turnkey/http`).
// The official client is a generated class of every operation whose module also loads an X.509
// stack for API-key stamping the browser never does; this one is a table and one `fetch`, typed
// by the official client's own declarations.
const OPERATIONS = {
  getActivity: 'query/get_activity',
  getApiKeys: 'query/get_api_keys',
  getAuthenticators: 'query/get_authenticators',
  getOauthProviders: 'query/get_oauth_providers',
  getOrganization: 'query/get_organization',
  getUser: 'query/get_user',
  getWallet: 'query/get_wallet',
  getWalletAccounts: 'query/list_wallet_accounts',
  getWallets: 'query/list_wallets',
  getWhoami: 'query/whoami',
  createApiKeys: 'submit/create_api_keys',
  createAuthenticators: 'submit/create_authenticators',
  createOauthProviders: 'submit/create_oauth_providers',
  createReadWriteSession: 'submit/create_read_write_session',
  createWallet: 'submit/create_wallet',
  createWalletAccounts: 'submit/create_wallet_accounts',
  deleteApiKeys: 'submit/delete_api_keys',
  deleteAuthenticators: 'submit/delete_authenticators',
  deleteOauthProviders: 'submit/delete_oauth_providers',
  emailAuth: 'submit/email_auth',
  exportWallet: 'submit/export_wallet',
  exportWalletAccount: 'submit/export_wallet_account',
  importWallet: 'submit/import_wallet',
  initImportWallet: 'submit/init_import_wallet',
  initOtpAuth: 'submit/init_otp_auth',
  initUserEmailRecovery: 'submit/init_user_email_recovery',
  oauth: 'submit/oauth',
  oauthLogin: 'submit/oauth_login',
  otpAuth: 'submit/otp_auth',
  recoverUser: 'submit/recover_user',
  signRawPayload: 'submit/sign_raw_payload',
  signRawPayloads: 'submit/sign_raw_payloads',
  signTransaction: 'submit/sign_transaction',
  stampLogin: 'submit/stamp_login',
} as const satisfies Partial<Record<keyof OfficialTurnkeyClient, string>>

/** A key-management operation the embedded wallet can call. */
export type KmsOperation = keyof typeof OPERATIONS

/** @internal The operations and their paths under `/public/v1/`. */
export const kmsOperations: Readonly<Record<KmsOperation, string>> = OPERATIONS

/**
 * The key-management API client: the official `@turnkey/http` client's methods for the operations
 * the browser uses, with the same requests, stamps and answers.
 */
export type TurnkeyClient = Pick<OfficialTurnkeyClient, KmsOperation>

/**
 * A refused request, as `@turnkey/http` reports it: "Turnkey error {code}: {message}", with the
 * gRPC `code` and the service's `details`.
 *
 * @example
 * try { await kms.getWhoami({ organizationId }) } catch (error) { if (error instanceof TurnkeyRequestError) error.code }
 */
export class TurnkeyRequestError extends Error {
  override name = 'TurnkeyRequestError'
  readonly code: number
  readonly details: unknown
  constructor(input: { code: number; message: string; details?: unknown }) {
    super(`Turnkey error ${input.code}: ${input.message}${input.details == null ? '' : ` (Details: ${JSON.stringify(input.details)})`}`)
    this.code = input.code
    this.details = input.details ?? null
  }
}

/**
 * A client of the key-management API at `baseUrl` whose requests `stamper` stamps: `POST
 * {baseUrl}/public/v1/{query|submit}/{op}` with the JSON body and the stamp header, as the official
 * client sends them, so it speaks to `@latchkey/kms` and to Turnkey alike.
 *
 * @example
 * const kms = createTurnkeyClient({ baseUrl: 'http://localhost:8090' }, consent.queryStamper)
 * const { organizationId } = await kms.getWhoami({ organizationId: parentOrganizationId })
 */
export function createTurnkeyClient(config: { baseUrl: string; fetch?: typeof fetch | undefined }, stamper: Stamper): TurnkeyClient {
  async function request(path: string, input: unknown): Promise<unknown> {
    const body = JSON.stringify(input)
    return postStamped(config, path, body, await stamper.stamp(body))
  }
  const client: Record<string, (input: unknown) => Promise<unknown>> = {}
  for (const [name, path] of Object.entries(OPERATIONS)) client[name] = (input) => request(path, input)
  return client as unknown as TurnkeyClient
}

/**
 * @internal Posts the exact `body` with its `stamp` to `/public/v1/${path}`: for a body the
 * consent frame wrote itself (create_grant names the key it made) or the kms's Latchkey
 * extensions, which the official client has no operation for. Refusals are TurnkeyRequestError.
 *
 * @example
 * await postStamped({ baseUrl }, 'submit/create_grant', payload, stamp)
 */
export async function postStamped(
  config: { baseUrl: string; fetch?: typeof fetch | undefined },
  path: string,
  body: string,
  stamp: { stampHeaderName: string; stampHeaderValue: string },
): Promise<unknown> {
  const response = await (config.fetch ?? fetch)(`${config.baseUrl}/public/v1/${path}`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', [stamp.stampHeaderName]: stamp.stampHeaderValue },
    body,
    redirect: 'error',
  })
  if (response.ok) return response.json()
  let refusal: { code: number; message: string; details?: unknown }
  try {
    refusal = await response.json()
  } catch {
    throw new Error(`${response.status} ${response.statusText}`)
  }
  throw new TurnkeyRequestError(refusal)
}
