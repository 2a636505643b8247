import { PASSKEY_PUBLIC_KEY_ALGORITHM, WEBAUTHN_CHALLENGE_BYTES, WEBAUTHN_TIMEOUT_MS, WEBAUTHN_USER_VERIFICATION } from '@latchkey/constants'
import { browserSupportsWebAuthn, startRegistration, WebAuthnError } from '@simplewebauthn/browser'
import { WebauthnStamper } from '@turnkey/webauthn-stamper'
import { EmbeddedError, PasskeyIdentifierRequiredError, WebauthnCeremonyError, WebauthnNotSupportedError } from './errors.js'
import type { Stamper } from './sessionKeys.js'
import { completed, DEFAULT_SESSION_SECONDS, type EmbeddedWallet, type EmbeddedWalletCredential, kmsCall } from './wallet.js'

/** SPEC §9: passkey constants, from the one module that holds them. */
export {
  PASSKEY_PUBLIC_KEY_ALGORITHM as PASSKEY_ALGORITHM,
  WEBAUTHN_CHALLENGE_BYTES,
  WEBAUTHN_TIMEOUT_MS,
  WEBAUTHN_USER_VERIFICATION,
} from '@latchkey/constants'

/** SPEC §3: what a passkey registration hands the key-management service. */
export type PasskeyAttestation = { credentialId: string; clientDataJson: string; attestationObject: string; transports: string[] }

const TRANSPORTS: Record<string, string> = {
  internal: 'AUTHENTICATOR_TRANSPORT_INTERNAL',
  usb: 'AUTHENTICATOR_TRANSPORT_USB',
  nfc: 'AUTHENTICATOR_TRANSPORT_NFC',
  ble: 'AUTHENTICATOR_TRANSPORT_BLE',
  hybrid: 'AUTHENTICATOR_TRANSPORT_HYBRID',
}

const base64url = (bytes: Uint8Array) =>
  btoa(String.fromCharCode(...bytes))
    .replace(/\+/g, '-')
    .replace(/\//g, '_')
    .replace(/=+$/, '')

function assertWebauthn() {
  if (!browserSupportsWebAuthn()) throw new WebauthnNotSupportedError()
}

/** A WebAuthn failure as its ceremony code (SPEC §8), or unchanged when it is ours already. */
function ceremonyError(error: unknown): Error {
  if (error instanceof EmbeddedError) return error
  if (error instanceof WebAuthnError) return new WebauthnCeremonyError(error.code, { details: error.message, cause: error })
  if (error instanceof DOMException && error.name === 'NotAllowedError')
    return new WebauthnCeremonyError('ERROR_CEREMONY_ABORTED', { details: error.message, cause: error })
  // The spec's UnknownError ("the authenticator failed"), which Chromium reports as NotReadableError.
  if (error instanceof DOMException && (error.name === 'UnknownError' || error.name === 'NotReadableError'))
    return new WebauthnCeremonyError('ERROR_AUTHENTICATOR_GENERAL_ERROR', { details: error.message, cause: error })
  return error instanceof Error ? error : new Error(String(error))
}

/**
 * Creates a passkey: 32 random challenge bytes, ES256 (-7), a discoverable credential, user
 * verification 'preferred', 300 s (SPEC §9). `userId` must be 1 to 64 bytes (SPEC §5). An
 * authenticator that holds one of `excludeCredentialIds` refuses with
 * ERROR_AUTHENTICATOR_PREVIOUSLY_REGISTERED instead of registering the user twice.
 *
 * @example
 * const { challenge, attestation } = await createPasskey({ rpId: 'localhost', rpName: 'Demo', userName: 'ada@example.com' })
 */
export async function createPasskey(parameters: {
  rpId: string
  rpName: string
  userName: string
  userId?: Uint8Array | undefined
  /** Credential ids (base64url) the user has registered already. */
  excludeCredentialIds?: readonly string[] | undefined
}): Promise<{ challenge: string; attestation: PasskeyAttestation }> {
  assertWebauthn()
  const userId = parameters.userId ?? crypto.getRandomValues(new Uint8Array(16))
  if (userId.length < 1 || userId.length > 64)
    throw new WebauthnCeremonyError('ERROR_INVALID_USER_ID_LENGTH', { details: `The user id is ${userId.length} bytes` })
  const challenge = base64url(crypto.getRandomValues(new Uint8Array(WEBAUTHN_CHALLENGE_BYTES)))
  let response: Awaited<ReturnType<typeof startRegistration>>
  try {
    response = await startRegistration({
      optionsJSON: {
        challenge,
        rp: { id: parameters.rpId, name: parameters.rpName },
        user: { id: base64url(userId), name: parameters.userName, displayName: parameters.userName },
        pubKeyCredParams: [{ type: 'public-key', alg: PASSKEY_PUBLIC_KEY_ALGORITHM }],
        authenticatorSelection: { residentKey: 'required', requireResidentKey: true, userVerification: WEBAUTHN_USER_VERIFICATION },
        timeout: WEBAUTHN_TIMEOUT_MS,
        attestation: 'none',
        excludeCredentials: (parameters.excludeCredentialIds ?? []).map((id) => ({ id, type: 'public-key' as const })),
      },
    })
  } catch (error) {
    throw ceremonyError(error)
  }
  return {
    challenge,
    attestation: {
      credentialId: response.id,
      clientDataJson: response.response.clientDataJSON,
      attestationObject: response.response.attestationObject,
      transports: (response.response.transports ?? [])
        .map((transport) => TRANSPORTS[transport])
        .filter((transport): transport is string => transport !== undefined),
    },
  }
}

/**
 * Passkey flows of an embedded wallet: sign-up (a new sub-organization whose root user is the
 * passkey), sign-in with the passkey alone (stamp_login naming the parent organization, which the
 * kms resolves to the user's sub-organization) and "Add a passkey".
 *
 * @example
 * const passkeys = passkeyFlows(wallet, { rpId: location.hostname, appName: 'Demo' })
 * await passkeys.signUp({ email: 'ada@example.com' }) // then the user types the emailed code in the consent frame
 */
export function passkeyFlows(wallet: EmbeddedWallet, options: { rpId: string; appName: string; sessionSeconds?: number | undefined }) {
  const sessionSeconds = options.sessionSeconds ?? DEFAULT_SESSION_SECONDS
  return {
    /**
     * A new passkey, then its account. With an email, the user then types the code the kms emails
     * it in the consent frame: the account holds the email once proven (security review H2).
     */
    async signUp(parameters: { email?: string | undefined; passkeyIdentifier?: string | undefined }): Promise<EmbeddedWalletCredential> {
      const email = parameters.email?.trim() || undefined
      const name = email || parameters.passkeyIdentifier?.trim()
      if (!name) throw new PasskeyIdentifierRequiredError()
      // The passkey first: a ceremony that fails sends no email.
      const { challenge, attestation } = await createPasskey({ rpId: options.rpId, rpName: options.appName, userName: name })
      return wallet.signUpWithAttestation({
        passkeyIdentifier: parameters.passkeyIdentifier,
        ...(email === undefined ? {} : { email }),
        challenge,
        attestation,
      })
    },

    async signIn(): Promise<EmbeddedWalletCredential> {
      assertWebauthn()
      const [{ organizationId }, publicKey] = await Promise.all([wallet.settings(), wallet.newSessionKey()])
      const stamper = new WebauthnStamper({ rpId: options.rpId, timeout: WEBAUTHN_TIMEOUT_MS, userVerification: WEBAUTHN_USER_VERIFICATION })
      const kms = await wallet.client(stamper)
      let result: Record<string, unknown>
      try {
        result = completed(
          await kmsCall(() =>
            kms.stampLogin({
              type: 'ACTIVITY_TYPE_STAMP_LOGIN',
              timestampMs: String(Date.now()),
              organizationId,
              parameters: { publicKey, expirationSeconds: String(sessionSeconds) },
            }),
          ),
        )
      } catch (error) {
        throw ceremonyError(error)
      }
      const session = (result['stampLoginResult'] as { session: string }).session
      return wallet.signInWithSession(session, 'passkey', publicKey, sessionSeconds)
    },

    /**
     * "I lost my passkey": with the emailed recover-user key (the recovery frame stamps with it),
     * the browser creates a new passkey, `recover_user` registers it for the user, and the user
     * signs in with it (recovery state 'passkey').
     *
     * @example
     * await passkeys.recover(recoveryFrame)
     */
    async recover(recoveryStamper: Stamper, name = 'Recovered passkey'): Promise<EmbeddedWalletCredential> {
      const { challenge, attestation } = await createPasskey({ rpId: options.rpId, rpName: options.appName, userName: name })
      const { userId } = await wallet.recoverUser(recoveryStamper, { authenticatorName: name, challenge, attestation })
      const credential = await this.signIn()
      wallet.markPasskeyRecovery(userId)
      return credential
    },

    /**
     * Registers another passkey for the signed-in user; answers its authenticator id. The user's
     * passkeys are excluded, so an authenticator that holds one says so instead of adding a twin.
     */
    async add(name = 'Passkey'): Promise<string> {
      const current = wallet.current
      const registered = current
        ? await wallet.withSession((kms) => kmsCall(() => kms.getAuthenticators({ organizationId: current.organizationId, userId: current.userId })))
        : { authenticators: [] }
      const { challenge, attestation } = await createPasskey({
        rpId: options.rpId,
        rpName: options.appName,
        userName: current?.credential.address ?? name,
        excludeCredentialIds: registered.authenticators.map((authenticator) => authenticator.credentialId),
      })
      return wallet.addAuthenticator({ authenticatorName: name, challenge, attestation })
    },
  }
}

/** The passkey flows of one embedded wallet. */
export type PasskeyFlows = ReturnType<typeof passkeyFlows>
