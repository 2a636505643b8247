import { RECOVERY_CODE_VALIDITY_S } from '@latchkey/constants'
import { InvalidCodeError } from './errors.js'
import { completed, kmsCall } from './kmsCalls.js'
import type { TurnkeyClient } from './kmsClient.js'
import type { Stamper } from './sessionKeys.js'
import type { WalletContext } from './walletContext.js'
import type { EmbeddedWalletCredential, RecoveryState, RecoveryType } from './walletTypes.js'

/** SPEC §5: the credential a recovery code must be. */
const RECOVERY_CREDENTIALS: Record<RecoveryType, string> = {
  email: 'CREDENTIAL_TYPE_EMAIL_AUTH_KEY_P256',
  passkey: 'CREDENTIAL_TYPE_RECOVER_USER_KEY_P256',
}

/** The attestation of a new passkey as the kms takes it (SPEC §3). */
type PasskeyAttestationParams = { credentialId: string; clientDataJson: string; attestationObject: string; transports: string[] }

/** The compressed public key a stamper signs with: from its `X-Stamp` (research/turnkey-api.md §2.1). */
async function stampingKey(stamper: Stamper): Promise<string> {
  const { stampHeaderValue } = await stamper.stamp('{}')
  const json = atob(stampHeaderValue.replace(/-/g, '+').replace(/_/g, '/'))
  const { publicKey } = JSON.parse(json) as { publicKey?: unknown }
  if (typeof publicKey !== 'string') throw new InvalidCodeError({ details: 'The recovery credential does not stamp with a key' })
  return publicKey
}

/** How recovery signs in once its credential proved good: the wallet's own sign-in steps. */
export type RecoverySignIn = {
  newSessionKey(): Promise<string>
  signInWithSession(session: string, kind: 'recovery', sessionPublicKey: string, seconds: number, recovery?: RecoveryState): Promise<EmbeddedWalletCredential>
}

/** Account recovery (SPEC §5): by an emailed API key, or a new passkey registered with an emailed recover-user key. */
export function recoveryOf(context: WalletContext, signIn: RecoverySignIn) {
  const { now, backend, signedIn, client, settings, recoverySessionSeconds } = context

  /**
   * A client stamped by an emailed recovery credential, once the credential proves good (SPEC §5),
   * and the user it belongs to: the kms names them (whoami through the parent organization; the
   * backend tells no ids to whoever asks for a recovery email). The matching key (the one that
   * stamps) exists for that user, is the credential type the recovery needs (an API key for email,
   * a recover-user key for passkey), and was created within 900 s. Anything else is "The code is
   * invalid or expired." and nothing is written.
   */
  async function recoveryClient(recoveryStamper: Stamper, recoveryType: RecoveryType): Promise<{ kms: TurnkeyClient; organizationId: string; userId: string }> {
    const kms = await client(recoveryStamper)
    let apiKeys: { credential: { publicKey: string; type: string }; createdAt: { seconds: string; nanos?: string } }[]
    let publicKey: string
    let user: { organizationId: string; userId: string }
    try {
      publicKey = await stampingKey(recoveryStamper)
      user = await kms.getWhoami({ organizationId: (await settings()).organizationId })
      ;({ apiKeys } = await kms.getApiKeys({ organizationId: user.organizationId, userId: user.userId }))
    } catch (error) {
      throw new InvalidCodeError({ cause: error })
    }
    const key = apiKeys.find((candidate) => candidate.credential.publicKey === publicKey)
    const wanted = RECOVERY_CREDENTIALS[recoveryType]
    if (!key) throw new InvalidCodeError({ details: 'No credential of this user matches the code' })
    if (key.credential.type !== wanted) throw new InvalidCodeError({ details: `The code is a ${key.credential.type}, not a ${wanted}` })
    const createdAt = Number(key.createdAt.seconds) * 1000 + Math.floor(Number(key.createdAt.nanos ?? 0) / 1_000_000)
    if (now() - createdAt > RECOVERY_CODE_VALIDITY_S * 1000) throw new InvalidCodeError({ details: `The code is older than ${RECOVERY_CODE_VALIDITY_S} s` })
    return { kms, organizationId: user.organizationId, userId: user.userId }
  }

  return {
    /**
     * Starts a recovery (SPEC §5): the backend has the kms email a code, a credential bundle
     * encrypted to `targetPublicKey` (the recovery frame's key) and valid 900 s. For `'email'` the
     * credential is an API key (email_auth); for `'passkey'` a recover-user key
     * (init_user_email_recovery), with which `recoverUser` registers a new passkey. The backend
     * answers alike whether the email has an account or not, and names no ids: the credential,
     * once opened, tells whose it is.
     */
    async startRecovery(email: string, targetPublicKey: string, recoveryType: RecoveryType = 'email'): Promise<{ recoveryType: RecoveryType }> {
      await backend.post<Record<string, never>>('/auth/recovery/start', { email, targetPublicKey, recoveryType })
      return { recoveryType }
    },

    /**
     * Finishes email recovery with a client stamped by the emailed credential (the recovery frame):
     * it must be an API key of the user, created within 900 s (SPEC §5); then a new session key
     * signs in for the recovery session (default 1800 s), active only until it expires (SPEC §4).
     */
    async finishRecovery(recoveryStamper: Stamper, recovery: { recoveryType?: RecoveryType | undefined } = {}): Promise<EmbeddedWalletCredential> {
      if ((recovery.recoveryType ?? 'email') !== 'email')
        throw new InvalidCodeError({ details: 'A passkey recovery code registers a new passkey; use recoverUser' })
      const { kms, organizationId, userId } = await recoveryClient(recoveryStamper, 'email')
      const publicKey = await signIn.newSessionKey()
      const login = completed(
        await kmsCall(() =>
          kms.stampLogin({
            type: 'ACTIVITY_TYPE_STAMP_LOGIN',
            timestampMs: String(now()),
            organizationId,
            parameters: { publicKey, expirationSeconds: String(recoverySessionSeconds) },
          }),
        ),
      )
      const session = (login['stampLoginResult'] as { session: string }).session
      const createdAt = new Date(now())
      return signIn.signInWithSession(session, 'recovery', publicKey, recoverySessionSeconds, {
        recoveryType: 'email',
        recoveryUserId: userId,
        createdAt: createdAt.toISOString(),
        sessionExpiration: new Date(createdAt.getTime() + recoverySessionSeconds * 1000).toISOString(),
      })
    },

    /**
     * Passkey recovery (SPEC §5, §7): with the emailed recover-user key (created within 900 s),
     * `recover_user` registers a new passkey (authenticator, userId) for the user. The caller then
     * signs in with that passkey (`passkeyFlows(...).recover` does both). Answers the new
     * authenticator's id and the recovered user's.
     */
    async recoverUser(
      recoveryStamper: Stamper,
      authenticator: { authenticatorName: string; challenge: string; attestation: PasskeyAttestationParams },
    ): Promise<{ authenticatorId: string; userId: string }> {
      const { kms, organizationId, userId } = await recoveryClient(recoveryStamper, 'passkey')
      const result = completed(
        await kmsCall(() =>
          kms.recoverUser({
            type: 'ACTIVITY_TYPE_RECOVER_USER',
            timestampMs: String(now()),
            organizationId,
            parameters: { userId, authenticator: authenticator as never },
          }),
        ),
      )
      const ids = (result['recoverUserResult'] as { authenticatorId?: string[] } | undefined)?.authenticatorId
      if (!ids?.[0]) throw new InvalidCodeError({ details: 'recover_user registered no passkey' })
      return { authenticatorId: ids[0], userId }
    },

    /** Marks the signed-in wallet as recovered by passkey (SPEC §3 recovery state). */
    markPasskeyRecovery(userId: string): void {
      const current = signedIn()
      context.write({
        ...current,
        recovery: {
          recoveryType: 'passkey',
          recoveryUserId: userId,
          createdAt: new Date(now()).toISOString(),
          sessionExpiration: current.session.expirationDate,
        },
      })
    },

    /** SPEC §4: a recovery session is active only for email recovery and until it expires. */
    isRecoverySessionActive(): boolean {
      const recovery = context.current()?.recovery
      return recovery?.recoveryType === 'email' && Date.parse(recovery.sessionExpiration) > now()
    },
  }
}
