import type { OidcVerifier } from './auth/oidc.js'
import type { Db } from './db.js'
import type { Mailer } from './mail.js'
import type { SealingKey } from './secrets.js'
import type { WalletAccountRow } from './storage/tables.js'
import type { WebauthnConfig } from './webauthn.js'

/**
 * Who is asking: the user whose API key or passkey stamped the request, the organization that
 * user belongs to, and the organization the request names (the same, or a sub-organization).
 */
export type Caller = {
  readonly userId: string
  readonly homeOrganizationId: string
  readonly organizationId: string
  /** The API key's public key or the passkey's credential id that stamped the request (absent when an approved activity runs later). */
  readonly credential?: string | undefined
  /** The id of the API key that stamped the request (absent for a passkey, a read-only session, an approved activity run later). */
  readonly apiKeyId?: string | undefined
  /** The id of the API key that stamped the request, when it is a grant's key (grants/): its rule then applies. */
  readonly grantKeyId?: string | undefined
  /**
   * Unix ms: when the user who stamped the request last proved themselves: now for a passkey stamp,
   * else the API key's moment of verification (policies/freshVerification.ts `verifiedAtOf`). Absent:
   * never, or an approved activity run later. Keys registered for the same user inherit it.
   */
  readonly verifiedAt?: number | undefined
}

/** What an activity runs with: storage (inside the activity's transaction), keys, the clock and its caller. */
export type ActivityContext = {
  db: Db
  webauthn: WebauthnConfig
  /** The OpenID issuers and audiences whose ID tokens are believed (oauth, oauth_login, OAuth providers). */
  oidc: OidcVerifier
  mailer: Mailer
  masterKey: SealingKey
  /** P-256 private key (hex) that signs export and import bundles. */
  signerPrivateKey: string
  /** The longest lifetime, in seconds, a credential may be given (sessions, sign-ins, API keys). */
  maxCredentialSeconds: number
  now: () => number
  caller: Caller
  /**
   * What the request's authorization already read of the address it signs with, in this request:
   * the signing then reads it no more. Absent when nothing was read (a root user's signature).
   */
  signingKey?: SigningKeyRead | undefined
}

/** What an address names for signing in an organization: a private key's id, and the wallet account holding it (either, both or neither). */
export type SigningKeyRead = {
  organizationId: string
  address: string
  privateKeyId: string | undefined
  account: WalletAccountRow | undefined
}

/** One activity type: parameters in, result out. */
export type ActivityHandler = (params: unknown, context: ActivityContext) => Promise<Record<string, unknown>> | Record<string, unknown>
