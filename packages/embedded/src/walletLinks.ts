import { BackendError } from './backend.js'
import type { ConsentWalletRequest } from './consentFrame.js'
import { kmsCall } from './kmsCalls.js'
import { TurnkeyRequestError } from './kmsClient.js'
import type { Stamper } from './sessionKeys.js'
import type { WalletContext } from './walletContext.js'

/** A login linked to the user's account, as the backend answers it. */
export type LinkedLogin = { id: string; kind: string; label: string; linkedAt: string }

/** A new passkey's registration as the kms takes it (its attestation of `challenge`). */
export type PasskeyRegistration = {
  passkeyName: string
  challenge: string
  attestation: { credentialId: string; clientDataJson: string; attestationObject: string; transports: string[] }
}

/**
 * Linking a login that signs in (issue 28): a passkey or an email. The kms write that adds it is
 * stamped by the user's own key in the consent frame, after their Approve there, and the backend
 * carries that body to the kms unchanged once it has claimed the login (so a login of another user
 * changes nothing). The backend's own key can add neither.
 */
export function linksOf(context: WalletContext) {
  const { now, backend, signer, signedIn, approved } = context

  /**
   * Asks the user to approve `activity` as `consent`, then has the backend link it at `path` with
   * the fields `proof` answers. The kms's refusals the backend passes on read as the kms's own (a
   * fresh verification is asked for and the link runs again, `proof` included; a second factor is
   * `MfaRequiredError`).
   */
  function linkStamped(
    path: string,
    consent: ConsentWalletRequest,
    activity: Record<string, unknown>,
    proof: () => Promise<Record<string, unknown>> = async () => ({}),
  ) {
    return approved(consent, async (stamper: Stamper) => {
      const fields = await proof()
      const body = JSON.stringify({ ...activity, timestampMs: String(now()) })
      const stamp = await stamper.stamp(body)
      const { login } = await kmsCall(async () => {
        try {
          return await backend.post<{ login: LinkedLogin }>(path, { ...fields, activity: body, stamp })
        } catch (error) {
          if (error instanceof BackendError && error.kms) throw new TurnkeyRequestError(error.kms)
          throw error
        }
      })
      return login
    })
  }

  return {
    /**
     * Links a new passkey to the signed-in user (`POST /auth/user/link/passkey`): the user approves
     * "Add a way to sign in" in the consent frame. A passkey of another account is
     * `account_already_linked` and nothing changes.
     */
    async linkPasskey({ passkeyName, challenge, attestation }: PasskeyRegistration): Promise<LinkedLogin> {
      const { organizationId, userId } = signedIn()
      return linkStamped(
        '/auth/user/link/passkey',
        { method: 'add_credential', params: [{ type: 'passkey', authenticatorName: passkeyName }] },
        {
          type: 'ACTIVITY_TYPE_CREATE_AUTHENTICATORS_V2',
          organizationId,
          parameters: { userId, authenticators: [{ authenticatorName: passkeyName, challenge, attestation }] },
        },
      )
    },

    /**
     * Links an email to the signed-in user: the backend has the kms mail it a code, which the user
     * types in the consent frame, then approves the email there as a way to sign in. A new email
     * needs a fresh verification of the user (the kms's rule): when the kms asks for one, the user
     * re-verifies and the link runs again with a new code, since the refused link spent the first.
     * A wrong code is `InvalidCodeError`; an email of another account `account_already_linked`,
     * and nothing changes.
     */
    async linkEmail(email: string): Promise<LinkedLogin> {
      const { organizationId, userId } = signedIn()
      return linkStamped(
        '/auth/user/link/email',
        { method: 'add_credential', params: [{ type: 'email', email }] },
        { type: 'ACTIVITY_TYPE_UPDATE_USER_EMAIL', organizationId, parameters: { userId, userEmail: email } },
        async () => {
          const sent = await backend.post<{ otpId: string; otpEncryptionTargetBundle: string }>('/auth/user/link/email/start', { email })
          const sealed = await signer.collectOtp({ targetBundle: sent.otpEncryptionTargetBundle, email, otpId: sent.otpId })
          return { otpId: sent.otpId, encryptedOtpBundle: sealed.encryptedOtpBundle }
        },
      )
    },
  }
}
