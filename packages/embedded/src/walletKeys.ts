import { getAddress } from 'viem'
import type { ConsentWalletRequest, MfaCarried, MfaSubmit } from './consentFrame.js'
import { MissingBaseUrlError, ProviderRpcError } from './errors.js'
import { kmsCall } from './kmsCalls.js'
import type { WalletContext } from './walletContext.js'
import type { EmbeddedWalletCredential } from './walletTypes.js'

const ETHEREUM_ACCOUNT = {
  curve: 'CURVE_SECP256K1',
  pathFormat: 'PATH_FORMAT_BIP32',
  path: "m/44'/60'/0'/0/0",
  addressFormat: 'ADDRESS_FORMAT_ETHEREUM',
} as const

/**
 * The user's accounts and credentials: more accounts of the wallet, passkeys, second factors,
 * export and import. Each activity is approved by the user in the consent frame.
 */
export function keysOf(context: WalletContext) {
  const { now, signer, signedIn, settings, withSession, submit, credentialOf, write } = context

  /**
   * Posts a body the consent frame wrote and stamped for a second factor to the kms and answers
   * the kms's status and JSON as they are (the frame reads refusals itself). Only the two
   * second-factor activities: the frame names nothing else for this page to post.
   */
  async function carryMfa(submit: MfaSubmit): Promise<MfaCarried> {
    if (submit.op !== 'create_totp_factor' && submit.op !== 'verify_mfa_factor')
      throw new ProviderRpcError(-32603, `The consent frame asked to submit ${String(submit.op).slice(0, 64)}`)
    const { kmsUrl } = await settings()
    if (!kmsUrl) throw new MissingBaseUrlError()
    const response = await kmsCall(() =>
      fetch(`${kmsUrl}/public/v1/submit/${submit.op}`, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json', [submit.stampHeaderName]: submit.stampHeaderValue },
        body: submit.body,
        redirect: 'error',
      }),
    )
    return { status: response.status, body: await response.json().catch(() => ({})) }
  }

  const keys = {
    /** The Ethereum accounts of the signed-in user's wallet, in derivation order. */
    async accounts(): Promise<`0x${string}`[]> {
      const { organizationId, credential } = signedIn()
      const { accounts } = await withSession((kms) => kmsCall(() => kms.getWalletAccounts({ organizationId, walletId: credential.signerRefId })))
      return accounts.filter((account) => account.addressFormat === 'ADDRESS_FORMAT_ETHEREUM').map((account) => getAddress(account.address))
    },

    /** Derives the wallet's next Ethereum account (m/44'/60'/0'/0/i) and switches to it. */
    async addAccount(): Promise<EmbeddedWalletCredential> {
      const { organizationId, credential } = signedIn()
      const index = (await keys.accounts()).length
      const path = `m/44'/60'/0'/0/${index}`
      const consent: ConsentWalletRequest = { method: 'add_account', params: [{ walletId: credential.signerRefId, path }] }
      const result = await submit<{ addresses: string[] }>('createWalletAccountsResult', consent, (kms) =>
        kms.createWalletAccounts({
          type: 'ACTIVITY_TYPE_CREATE_WALLET_ACCOUNTS',
          timestampMs: String(now()),
          organizationId,
          parameters: { walletId: credential.signerRefId, accounts: [{ ...ETHEREUM_ACCOUNT, path }] },
        }),
      )
      const address = result!.addresses[0]!
      return keys.selectAccount(address)
    },

    /** Switches to another account of the user's wallet; the provider announces `accountsChanged`. */
    async selectAccount(address: string): Promise<EmbeddedWalletCredential> {
      const current = signedIn()
      const next = await withSession((kms) =>
        credentialOf(current.organizationId, address, kms, { userId: current.userId, publicKey: signedIn().session.publicKey }),
      )
      // Delegations belong to the account: another account starts unread.
      write({ ...signedIn(), credential: next, delegations: undefined })
      return next
    },

    /** Passkey registration for the signed-in user (create_authenticators), approved in the consent frame. */
    async addAuthenticator(parameters: {
      authenticatorName: string
      challenge: string
      attestation: { credentialId: string; clientDataJson: string; attestationObject: string; transports: string[] }
    }): Promise<string> {
      const { userId, organizationId } = signedIn()
      const consent: ConsentWalletRequest = { method: 'add_credential', params: [{ type: 'passkey', authenticatorName: parameters.authenticatorName }] }
      const result = await submit<{ authenticatorIds: string[] }>('createAuthenticatorsResult', consent, (kms) =>
        kms.createAuthenticators({
          type: 'ACTIVITY_TYPE_CREATE_AUTHENTICATORS_V2',
          timestampMs: String(now()),
          organizationId,
          parameters: { userId, authenticators: [parameters as never] },
        }),
      )
      return result!.authenticatorIds[0]!
    },

    /**
     * Enrols an authenticator app (TOTP) as the user's second factor, in the consent frame: the
     * frame shows the secret (text and QR code), takes the first code and shows the 10 recovery
     * codes; this page only carries the frame's stamped bodies to the kms. Answers the factor's
     * id, never the secret or the codes. Cancel is `ProviderRpcError` 4001.
     */
    async enrollTotp(): Promise<{ factorId: string }> {
      const { organizationId, userId } = signedIn()
      const done = await withSession(() => signer.secondFactor({ type: 'ENROLL_TOTP', value: { organizationId, userId } }, carryMfa))
      if (done.type !== 'TOTP_ENROLLED') throw new ProviderRpcError(-32603, `The consent frame answered ${done.type}`)
      return { factorId: done.value.factorId }
    },

    /**
     * Verifies the second factor `factorId` for this session, in the consent frame (a code from
     * the authenticator app, or a recovery code): what an activity refused with
     * `MfaRequiredError` needs before it is retried. Cancel is `ProviderRpcError` 4001.
     */
    async verifyMfa(factorId: string): Promise<{ verified: true }> {
      const { organizationId } = signedIn()
      const done = await withSession(() => signer.secondFactor({ type: 'VERIFY_MFA', value: { organizationId, factorId } }, carryMfa))
      if (done.type !== 'MFA_VERIFIED') throw new ProviderRpcError(-32603, `The consent frame answered ${done.type}`)
      return { verified: true }
    },

    /** The export bundle of the user's wallet, encrypted to `targetPublicKey` (the export frame's key), approved in the consent frame. */
    async exportBundle(targetPublicKey: string): Promise<string> {
      const { organizationId, credential } = signedIn()
      const consent: ConsentWalletRequest = { method: 'export_wallet', params: [{ walletId: credential.signerRefId, targetPublicKey }] }
      const result = await submit<{ exportBundle: string }>('exportWalletResult', consent, (kms) =>
        kms.exportWallet({
          type: 'ACTIVITY_TYPE_EXPORT_WALLET',
          timestampMs: String(now()),
          organizationId,
          parameters: { walletId: credential.signerRefId, targetPublicKey },
        }),
      )
      return result!.exportBundle
    },

    /** The import bundle the import frame encrypts to. */
    async importBundle(): Promise<string> {
      const { organizationId, userId } = signedIn()
      const result = await submit<{ importBundle: string }>('initImportWalletResult', { method: 'init_import', params: [] }, (kms) =>
        kms.initImportWallet({ type: 'ACTIVITY_TYPE_INIT_IMPORT_WALLET', timestampMs: String(now()), organizationId, parameters: { userId } }),
      )
      return result!.importBundle
    },

    /** Imports the wallet the import frame encrypted; answers its first Ethereum address. */
    async importWallet(encryptedBundle: string, walletName: string): Promise<`0x${string}`> {
      const { organizationId, userId } = signedIn()
      const consent: ConsentWalletRequest = { method: 'import_wallet', params: [{ walletName }] }
      const result = await submit<{ addresses: string[] }>('importWalletResult', consent, (kms) =>
        kms.importWallet({
          type: 'ACTIVITY_TYPE_IMPORT_WALLET',
          timestampMs: String(now()),
          organizationId,
          parameters: { userId, walletName, encryptedBundle, accounts: [ETHEREUM_ACCOUNT] },
        }),
      )
      return getAddress(result!.addresses[0]!)
    },
  }
  return keys
}
