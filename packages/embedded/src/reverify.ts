import { WEBAUTHN_TIMEOUT_MS, WEBAUTHN_USER_VERIFICATION } from '@latchkey/constants'
import { WebauthnStamper } from '@turnkey/webauthn-stamper'
import type { Backend, BackendAccount } from './backend.js'
import type { CollectedOtp, CollectOtpValue } from './consentFrame.js'
import { InvalidCodeError, KmsRequestError, ProviderRpcError, SessionError } from './errors.js'
import type { TurnkeyClient } from './kmsClient.js'
import type { Stamper } from './sessionKeys.js'
import type { StoredWallet } from './wallet.js'

// Re-verification (issue 25, item 5). In a sub-organization the kms refuses export and every new
// credential or session from a session key whose user last proved themselves more than its window
// ago (900 s unless configured; the kms's policies/freshVerification.ts). Instead of that refusal
// the user sees a prompt: the wallet re-verifies the same user and runs the action once more. A
// user with a passkey answers the passkey prompt, and the retry is stamped by the passkey (a
// passkey stamp is fresh). Anyone else gets an emailed code, typed in the consent frame and sealed
// with the frame's current key, whose login re-verifies that key (the kms's otp_login of a key the
// user holds: fresh for the window, its expiry unchanged); the retry is stamped by it. Cancelling
// either prompt ends the action with 4001, and the wallet stays signed in with the key it had.

/** The kms's PermissionDenied, the code its fresh-verification refusal carries. */
const PERMISSION_DENIED = 7

/** Tries of an emailed code before the re-verification gives up: as many as the backend allows per code. */
export const REVERIFY_CODE_TRIES = 3

/**
 * Whether `error` is the kms's refusal of an activity that needs a fresh verification (export, new
 * API keys, passkeys, sessions, stamp_login from a session key in a sub-organization): the
 * `freshVerificationRequired` PermissionDenied, as the wallet's `kmsCall` reports it.
 *
 * @example
 * if (isFreshVerificationRequired(error)) await reverify()
 */
export function isFreshVerificationRequired(error: unknown): boolean {
  return (
    error instanceof KmsRequestError &&
    error.kmsCode === PERMISSION_DENIED &&
    error.shortMessage.startsWith(`Turnkey error ${PERMISSION_DENIED}: fresh verification required: `)
  )
}

/** What re-verification needs of the wallet (wallet.ts hands over its closures). */
export type ReverifyHost = {
  /** The signed-in wallet now, if any. */
  current(): StoredWallet | undefined
  readonly backend: Backend
  /** The consent frame: the emailed code typed there, sealed with its current key. */
  readonly signer: { collectOtp(value: CollectOtpValue): Promise<CollectedOtp> }
  /** A kms client stamped by `stamper`, default the session key's query stamper. */
  client(stamper?: Stamper): Promise<TurnkeyClient>
  /** The wallet's kms call: refusals as `KmsRequestError`. */
  kmsCall<result>(call: () => Promise<result>): Promise<result>
  /** The wallet's sign-out: the backend deletes the session's key in the kms, the frame forgets its key. */
  signOut(): Promise<void>
  now(): number
  /** Lifetime of a key an email code registers (the wallet's session keys'). */
  readonly sessionSeconds: number
  /** The passkey relying party; without it (or without WebAuthn) the user re-verifies by email. */
  readonly rpId: string | undefined
}

/** What the backend's `GET /auth/session` tells of the signed-in user, or null when signed out. */
type BackendSession = { email: string | null; organizationId: string | null; userId: string | null } | null

/**
 * The retry around the wallet's activities: `freshly(attempt)` runs `attempt()` (stamped by the
 * session key, which the consent frame asks the user to approve); when the kms refuses it for want
 * of a fresh verification, the user re-verifies and `attempt` runs once more: with a passkey
 * stamper (a user with a passkey), or again with the session key, which the emailed code has
 * re-verified. Concurrent refusals share one emailed code; an attempt refused before another action
 * re-verified by email retries at once. Anything else the attempt throws is unchanged. The session
 * key stays the kms's throughout, so the wallet's other requests never wait for a code.
 *
 * @example
 * const { freshly } = freshVerification(host)
 * const result = await freshly((passkey) => exportWith(passkey ?? sessionStamper))
 */
export function freshVerification(host: ReverifyHost) {
  let byEmail: Promise<void> | undefined
  /** Emailed re-verifications completed: an attempt that began before one retries without another code. */
  let verified = 0
  return {
    async freshly<result>(attempt: (passkey?: Stamper) => Promise<result>): Promise<result> {
      const before = verified
      try {
        return await attempt()
      } catch (error) {
        if (!isFreshVerificationRequired(error)) throw error
        if (verified !== before) return attempt()
        const passkey = await passkeyStamper(host)
        if (passkey) return attempt(passkey)
        byEmail ??= reverifyByEmail(host, error)
          .then(() => void verified++)
          .finally(() => (byEmail = undefined))
        await byEmail
        return attempt()
      }
    },
  }
}

/**
 * A stamper that asks for one of the signed-in user's passkeys (only theirs are offered), when the
 * user has one and this page can ask (an rpId and WebAuthn); otherwise undefined. Closing the
 * prompt is 4001.
 */
async function passkeyStamper(host: ReverifyHost): Promise<Stamper | undefined> {
  const current = host.current()
  if (!current || !host.rpId || typeof navigator === 'undefined' || !navigator.credentials) return undefined
  const kms = await host.client()
  const { authenticators } = await host.kmsCall(() => kms.getAuthenticators({ organizationId: current.organizationId, userId: current.userId }))
  if (authenticators.length === 0) return undefined
  const stamper = new WebauthnStamper({
    rpId: host.rpId,
    timeout: WEBAUTHN_TIMEOUT_MS,
    userVerification: WEBAUTHN_USER_VERIFICATION,
    allowCredentials: authenticators.map((authenticator) => ({ type: 'public-key', id: fromBase64url(authenticator.credentialId) })),
  })
  return {
    async stamp(payload) {
      try {
        return await stamper.stamp(payload)
      } catch (error) {
        // The prompt closed (or timed out): browsers tell no more, so that pages cannot probe for passkeys.
        if (error instanceof DOMException && (error.name === 'NotAllowedError' || error.name === 'AbortError'))
          throw new ProviderRpcError(4001, 'User rejected the request.')
        throw error
      }
    },
  }
}

/**
 * Re-verifies the signed-in user by an emailed code: the backend's session names the user and
 * their email (a session of another user, or none, is refused before any code is sent); the kms
 * emails a code (`/auth/email/start`, init_otp V3); the user types it in the consent frame
 * (COLLECT_OTP), up to {@link REVERIFY_CODE_TRIES} times, sealed with the frame's current key;
 * `/auth/email/verify` logs that key in again, which the kms records as a verification of the key
 * the user already holds. Nothing is replaced: a cancel (4001) or a last wrong code leaves the
 * wallet signed in as it was, and a code of another user's mailbox cannot log in a key of this one
 * (the kms refuses it).
 */
async function reverifyByEmail(host: ReverifyHost, refusal: unknown): Promise<void> {
  const user = host.current()
  if (!user) throw refusal
  const session = await host.backend.get<BackendSession>('/auth/session')
  if (!session || session.organizationId !== user.organizationId || session.userId !== user.userId)
    throw new SessionError({
      details: 'The app backend is signed out, or signed in as another user: sign in again to confirm it is you.',
      cause: refusal,
    })
  if (!session.email) throw refusal
  const email = session.email
  const sent = await host.backend.post<{ otpId: string; otpEncryptionTargetBundle: string }>('/auth/email/start', { email })
  const { account, publicKey } = await typedCode(host, { targetBundle: sent.otpEncryptionTargetBundle, email, otpId: sent.otpId })
  const latest = host.current()
  if (account.organizationId !== user.organizationId || account.userId !== user.userId || publicKey !== latest?.session.publicKey) {
    // Signed out meanwhile, or a login the kms should have refused: whatever the backend now
    // holds for this browser goes, with the key.
    await host.signOut()
    throw new SessionError({ details: 'The wallet signed out during the re-verification.' })
  }
}

/** The code the user types in the consent frame, verified by the backend; a wrong one is asked for again. */
async function typedCode(host: ReverifyHost, value: CollectOtpValue & { otpId: string }): Promise<{ account: BackendAccount; publicKey: string }> {
  for (let tries = 1; ; tries++) {
    const sealed = await host.signer.collectOtp(value)
    try {
      const account = await host.backend.post<BackendAccount>('/auth/email/verify', {
        otpId: value.otpId,
        encryptedOtpBundle: sealed.encryptedOtpBundle,
        clientSignature: sealed.clientSignature,
        sessionSeconds: host.sessionSeconds,
      })
      return { account, publicKey: sealed.publicKey }
    } catch (error) {
      if (!(error instanceof InvalidCodeError) || tries >= REVERIFY_CODE_TRIES) throw error
    }
  }
}

function fromBase64url(text: string): Uint8Array<ArrayBuffer> {
  const binary = atob(text.replace(/-/g, '+').replace(/_/g, '/'))
  return Uint8Array.from(binary, (character) => character.charCodeAt(0))
}
