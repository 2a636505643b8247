import { RECOVERY_SESSION_EXPIRY_S } from '@latchkey/constants'
import { type Address, type Chain, getAddress, type Hex, type SignableMessage, type TransactionSerializable, type TypedDataDefinition } from 'viem'
import { type Backend, type BackendAccount, type BackendConfig, createBackend } from './backend.js'
import type { ConsentWalletRequest } from './consentFrame.js'
import {
  AccountNotFoundError,
  ClientsNotFoundError,
  EmbeddedError,
  isSessionKeyExpired,
  MissingAppNameError,
  MissingBaseUrlError,
  SessionError,
  SubOrganizationNotFoundError,
} from './errors.js'
import { BATCH_EXECUTOR_ADDRESS } from './executor.js'
import { type Activity, completed, kmsCall } from './kmsCalls.js'
import { createTurnkeyClient, postStamped, type TurnkeyClient } from './kmsClient.js'
import { linkingPortOf } from './linking.js'
import { freshVerification } from './reverify.js'
import type { Stamper } from './sessionKeys.js'
import { consentSigner, testOnlySigner } from './signers.js'
import { callsOf } from './walletCalls.js'
import type { WalletContext } from './walletContext.js'
import { keysOf } from './walletKeys.js'
import { linksOf } from './walletLinks.js'
import { permissionsOf } from './walletPermissions.js'
import { recoveryOf } from './walletRecovery.js'
import { signingOf } from './walletSigning.js'
import type { EmailCodeSent, EmbeddedWalletCredential, EmbeddedWalletOptions, KeyValueStorage, RecoveryState, SignInKind, StoredWallet } from './walletTypes.js'

/** SPEC §5 and §9 constants, from the one module that holds them. */
export {
  RECOVERY_CODE_VALIDITY_S as RECOVERY_CODE_SECONDS,
  RECOVERY_SESSION_EXPIRY_S as RECOVERY_SESSION_SECONDS,
  WALLET_NAMES,
} from '@latchkey/constants'
export { completed, kmsCall } from './kmsCalls.js'
export type {
  EmailCodeSent,
  EmbeddedWalletCredential,
  EmbeddedWalletOptions,
  KeyValueStorage,
  RecoveryState,
  RecoveryType,
  SessionKey,
  SignInKind,
  StoredWallet,
  TransactionRequest,
} from './walletTypes.js'
/**
 * Lifetime of a session key unless configured: 12 hours (not a SPEC §9 value). No route renews a
 * key (a page-chosen key was the H1 hole), so its end means signing in again: a working day. It is
 * within the kms's default `--max-credential-lifetime` (86400 s) and the backend's cap (86400 s),
 * and within the frame's own 48 h key lifetime. Without the user's Approve in the frame the key
 * stamps nothing but read-only queries, so a longer life adds no silent signing.
 */
export const DEFAULT_SESSION_SECONDS = 43_200
const STORAGE_KEY = 'latchkey.embedded.wallet'

/** How long a guest's key lives: the longest the backend registers a session key for (a day). */
const GUEST_SESSION_SECONDS = 86_400

/**
 * An embedded wallet: signs in by email code or passkey through the app backend, and signs through
 * the key-management API with a thin client typed by the official `@turnkey/http`. Its session key
 * is the consent frame's (kms frames origin): the frame stamps queries silently and each activity
 * only after the user's Approve there. When the key has expired (or was revoked) the wallet signs
 * out and the user signs in again: no route lets the page register a key (security review H1).
 *
 * @example
 * const wallet = createEmbeddedWallet({ appName: 'Demo', backendUrl: 'http://localhost:8787', chains: [anvil] })
 * const sent = await wallet.startEmail('ada@example.com')
 * await wallet.verifyEmail(sent) // the user types the code in the consent frame
 * const signature = await wallet.signMessage({ message: 'hello' })
 */
export function createEmbeddedWallet(options: EmbeddedWalletOptions) {
  if (!options.appName) throw new MissingAppNameError()
  if (!options.backendUrl) throw new MissingBaseUrlError({ details: 'backendUrl is required' })
  const now = options.now ?? Date.now
  const batchExecutor: Address | null = options.batchExecutor === undefined ? BATCH_EXECUTOR_ADDRESS : options.batchExecutor
  const sessionSeconds = options.sessionSeconds ?? DEFAULT_SESSION_SECONDS
  const recoverySessionSeconds = options.recoverySessionSeconds ?? RECOVERY_SESSION_EXPIRY_S
  const storage = options.storage ?? (typeof localStorage === 'undefined' ? memoryStorage() : localStorage)
  const backend: Backend = createBackend(options.backendUrl, options.fetch)
  const signer = options.testOnlySessionKeys
    ? testOnlySigner(options.testOnlySessionKeys)
    : consentSigner(async () => (await settings()).framesUrl, options.locale)
  const listeners = new Set<(record: StoredWallet | undefined) => void>()
  let record: StoredWallet | undefined = read()
  let config: Promise<BackendConfig> | undefined

  function read(): StoredWallet | undefined {
    try {
      const text = storage.getItem(STORAGE_KEY)
      return text ? (JSON.parse(text) as StoredWallet) : undefined
    } catch {
      return undefined
    }
  }
  function write(next: StoredWallet | undefined) {
    record = next
    if (next) storage.setItem(STORAGE_KEY, JSON.stringify(next))
    else storage.removeItem(STORAGE_KEY)
    for (const listener of listeners) listener(next)
  }

  /** The kms url, parent organization and frames url: given, else the backend's. */
  function settings(): Promise<BackendConfig> {
    if (options.kmsUrl && options.organizationId)
      return Promise.resolve({ kmsUrl: options.kmsUrl, organizationId: options.organizationId, framesUrl: options.framesUrl })
    return backendConfig()
  }

  /** The backend's /auth/config (once), with the given options taking precedence. */
  function backendConfig(): Promise<BackendConfig> {
    config ??= backend.get<BackendConfig>('/auth/config').then(
      (answer) => ({
        kmsUrl: options.kmsUrl ?? answer.kmsUrl,
        organizationId: options.organizationId ?? answer.organizationId,
        framesUrl: options.framesUrl ?? answer.framesUrl,
        oauth: answer.oauth,
      }),
      (error: unknown) => {
        throw new ClientsNotFoundError({ details: 'The app backend did not say where the key-management service is', cause: error })
      },
    )
    config.catch(() => (config = undefined))
    return config
  }

  async function client(stamper: Stamper = signer.query): Promise<TurnkeyClient> {
    const { kmsUrl } = await settings()
    if (!kmsUrl) throw new MissingBaseUrlError()
    return createTurnkeyClient({ baseUrl: kmsUrl }, stamper)
  }

  function signedIn(): StoredWallet {
    if (!record) throw new AccountNotFoundError({ details: 'Sign in with email or a passkey first.' })
    return record
  }

  function chainOf(chainId: number): Chain {
    const chain = options.chains.find((candidate) => candidate.id === chainId)
    if (!chain) throw new EmbeddedError('chain_not_configured', `Chain ${chainId} is not configured.`)
    return chain
  }

  /** Whether the kms lists `sessionPublicKey` as an unexpired API key of the user (see the credential's isSessionKeyCompatible). */
  async function sessionKeyCompatible(kms: TurnkeyClient, organizationId: string, userId: string, sessionPublicKey: string): Promise<boolean> {
    try {
      const { apiKeys } = await kms.getApiKeys({ organizationId, userId })
      const key = apiKeys.find((candidate) => candidate.credential.publicKey === sessionPublicKey)
      if (!key) return false
      const expiresIn = Number((key as { expirationSeconds?: string }).expirationSeconds ?? 0)
      return !expiresIn || Number(key.createdAt.seconds) * 1000 + expiresIn * 1000 > now()
    } catch {
      return false
    }
  }

  /** The user's Ethereum account in their sub-organization, as the SPEC §3 credential. */
  async function credentialOf(
    organizationId: string,
    address: string | undefined,
    kms: TurnkeyClient,
    session: { userId: string; publicKey: string },
  ): Promise<EmbeddedWalletCredential> {
    if (!organizationId) throw new SubOrganizationNotFoundError()
    // The accounts, the wallets (for the account's wallet name) and the key check in one round trip.
    const [{ accounts }, { wallets }, isSessionKeyCompatible] = await Promise.all([
      kmsCall(() => kms.getWalletAccounts({ organizationId })),
      kmsCall(() => kms.getWallets({ organizationId })),
      sessionKeyCompatible(kms, organizationId, session.userId, session.publicKey),
    ])
    const wanted = address?.toLowerCase()
    const account = accounts.find(
      (candidate) => candidate.addressFormat === 'ADDRESS_FORMAT_ETHEREUM' && (!wanted || candidate.address.toLowerCase() === wanted),
    )
    if (!account) throw new AccountNotFoundError({ details: `No Ethereum account in sub-organization ${organizationId}` })
    const wallet = wallets.find((candidate) => candidate.walletId === account.walletId)
    if (!wallet) throw new AccountNotFoundError({ details: `No wallet ${account.walletId} in sub-organization ${organizationId}` })
    return {
      address: getAddress(account.address),
      id: account.walletAccountId,
      chain: `eip155:${options.chains[0].id}`,
      walletName: wallet.walletName,
      signerRefId: account.walletId,
      walletProperties: { turnkeySubOrganizationId: organizationId, isSessionKeyCompatible },
    }
  }

  /** The record with the credential's smart-account fields for its current chain (from `delegations`). */
  function withSmartAccount(next: StoredWallet): StoredWallet {
    const delegate = next.delegations?.[String(next.chainId)]
    const { smartWalletRefAddress: _address, smartWalletRefId: _id, ...credential } = next.credential
    return {
      ...next,
      credential: delegate ? { ...credential, smartWalletRefAddress: credential.address, smartWalletRefId: `eip155:${next.chainId}:${delegate}` } : credential,
    }
  }

  /** Signed in: the credential, the session key's expiry, and the record kept for reloads. */
  async function finishSignIn(
    account: BackendAccount,
    kind: SignInKind,
    sessionPublicKey: string,
    seconds: number,
    recovery?: RecoveryState,
  ): Promise<EmbeddedWalletCredential> {
    const credential = await credentialOf(account.organizationId, account.address, await client(), { userId: account.userId, publicKey: sessionPublicKey })
    write({
      credential,
      userId: account.userId,
      organizationId: account.organizationId,
      kind,
      session: { publicKey: sessionPublicKey, expirationDate: new Date(now() + seconds * 1000).toISOString() },
      recovery,
      chainId: record?.chainId ?? options.chains[0].id,
    })
    return credential
  }

  /**
   * Runs a stamped action. An expired or unknown session key ends the sign-in: no route renews a
   * key (the page must not pick the user's key), so the user signs in again.
   */
  async function withSession<result>(action: (kms: TurnkeyClient) => Promise<result>): Promise<result> {
    const current = signedIn()
    if (current.recovery && Date.parse(current.recovery.sessionExpiration) <= now()) {
      await signOut()
      throw new SessionError({ details: 'The recovery session has expired; sign in again.' })
    }
    const kms = await client()
    try {
      return await action(kms)
    } catch (error) {
      if (!isSessionKeyExpired(error)) throw error
      await signOut()
      throw new SessionError({ details: 'The session key has expired or was revoked; sign in again.', cause: error })
    }
  }

  /**
   * Submits an activity the user approves in the consent frame as `consent` (the EIP-1193 request
   * that caused it) and answers its result under `key`. One the kms refuses for want of a fresh
   * verification (export, a new passkey) runs once more after the user re-verifies.
   */
  async function submit<result>(
    key: string,
    consent: ConsentWalletRequest,
    call: (kms: TurnkeyClient) => Promise<{ activity: Activity }>,
  ): Promise<result | undefined> {
    const result = await approved(consent, async (stamper) => {
      const kms = await client(stamper)
      return completed(await kmsCall(() => call(kms)))
    })
    return result[key] as result | undefined
  }

  /**
   * Runs `action` with the stamper of the user's Approve of `consent` in the consent frame (or, once
   * the kms asked for a fresh verification, of the passkey the user re-verified with), in the session.
   */
  function approved<result>(consent: ConsentWalletRequest, action: (stamper: Stamper) => Promise<result>): Promise<result> {
    return withSession(() =>
      fresh.freshly(async (passkey) => {
        const { credential, chainId } = signedIn()
        return action(passkey ?? signer.approve(consent, { account: credential.address, chainId }))
      }),
    )
  }

  /** The one retry of an activity the kms refuses for want of a fresh verification (reverify.ts). */
  const fresh = freshVerification({
    current: () => record,
    backend,
    signer,
    client,
    kmsCall,
    signOut: () => signOut(),
    now,
    sessionSeconds,
    rpId: options.rpId ?? (typeof location === 'undefined' ? undefined : location.hostname),
  })

  /** POSTs a body the frame stamped (or wrote) to the kms; answers its activity's result. */
  async function submitStamped(path: string, body: string, stamp: { stampHeaderName: string; stampHeaderValue: string }) {
    const { kmsUrl } = await settings()
    if (!kmsUrl) throw new MissingBaseUrlError()
    return completed((await postStamped({ baseUrl: kmsUrl }, path, body, stamp)) as { activity: Activity })
  }

  /**
   * The sign-out under way, if any. The wallet reads as signed out at once, so the user may start
   * a sign-in before the frame has forgotten the old key: the new key waits for that, or the late
   * reset would forget the new key instead.
   */
  let signingOut: Promise<void> | undefined

  /**
   * Signs out: the backend deletes the session's key in the kms (with `everywhere`, every key of
   * the user, and ends their other sessions), then the frame forgets its key.
   */
  async function signOut(options: { everywhere?: boolean | undefined } = {}): Promise<void> {
    write(undefined)
    const ending = (async () => {
      await backend.post('/auth/signout', options.everywhere ? { everywhere: true } : {}).catch(() => undefined)
      await signer.reset().catch(() => undefined)
    })()
    signingOut = ending
    try {
      await ending
    } finally {
      if (signingOut === ending) signingOut = undefined
    }
  }

  /** What each concern of the wallet (signing, calls, permissions, keys, recovery) uses of it. */
  const context: WalletContext = {
    options,
    now,
    signer,
    backend,
    batchExecutor,
    recoverySessionSeconds,
    settings,
    client,
    signedIn,
    current: () => record,
    write,
    chainOf,
    chainId: () => wallet.chainId,
    withSmartAccount,
    credentialOf,
    withSession,
    submit,
    approved,
    submitStamped,
  }
  const signing = signingOf(context)
  const { signMessage, signTypedData, signTransaction } = signing

  const wallet = {
    /** The signed-in wallet, if any (from storage: no network). */
    get current(): StoredWallet | undefined {
      return record
    },
    /** Calls `listener` with each change of the signed-in wallet. */
    subscribe(listener: (record: StoredWallet | undefined) => void): () => void {
      listeners.add(listener)
      return () => listeners.delete(listener)
    },
    settings,
    /** What the backend publishes, social sign-ins included. */
    backendConfig,
    /** @internal The key-management client stamped by the session key. */
    client,

    /**
     * Emails a sign-in code; creates the user's wallet on their first sign-in. Answers the kms's
     * signed target bundle the code is sealed to in the consent frame (`verifyEmail`).
     */
    async startEmail(email: string): Promise<EmailCodeSent> {
      const sent = await backend.post<{ otpId: string; otpEncryptionTargetBundle: string }>('/auth/email/start', { email })
      return { ...sent, email }
    },

    /**
     * Signs in with the emailed code, typed by the user in the consent frame (never in this page):
     * the frame makes a new key, seals the code with it to the kms and signs that key's login; the
     * backend relays both to the kms, which registers the frame's key for the user. Cancelling in
     * the frame is `ProviderRpcError` 4001; a wrong code `invalid_code` (call again to retry).
     */
    async verifyEmail({ otpId, otpEncryptionTargetBundle, email }: EmailCodeSent): Promise<EmbeddedWalletCredential> {
      await wallet.newSessionKey()
      const sealed = await signer.collectOtp({ targetBundle: otpEncryptionTargetBundle, email, otpId })
      const answer = await backend.post<BackendAccount & { sessionExpiresAt: string }>('/auth/email/verify', {
        otpId,
        encryptedOtpBundle: sealed.encryptedOtpBundle,
        clientSignature: sealed.clientSignature,
        sessionSeconds,
      })
      return finishSignIn(answer, 'email', sealed.publicKey, sessionSeconds)
    },

    /**
     * Restores a stored sign-in after a reload while the frame's key is the one the sign-in
     * registered and has not expired. Otherwise the wallet signs out and answers `undefined`: the
     * user signs in again (no route renews a key).
     */
    async restore(): Promise<StoredWallet | undefined> {
      if (!record) return undefined
      const current = await signer.currentKey().catch(() => undefined)
      if (current !== record.session.publicKey || Date.parse(record.session.expirationDate) <= now()) {
        await signOut()
        return undefined
      }
      return record
    },

    /**
     * Social sign-in's last step: the backend exchanges the provider's code, verifies the ID token
     * (its nonce binds it to `sessionPublicKey`) and has the kms register the key for the user.
     */
    async signInWithOAuth(parameters: {
      provider: 'google' | 'apple'
      sessionPublicKey: string
      code: string
      codeVerifier: string
      redirectUri: string
    }): Promise<EmbeddedWalletCredential> {
      const answer = await backend.post<BackendAccount & { sessionExpiresAt: string }>('/auth/oauth', { ...parameters, sessionSeconds })
      return finishSignIn(answer, 'oauth', parameters.sessionPublicKey, sessionSeconds)
    },

    /**
     * "Continue as guest": a wallet with no login (`POST /auth/guest`). Its one credential is the
     * consent frame's new key, for a day (`GUEST_SESSION_SECONDS`): nothing else opens the wallet,
     * so clearing the browser or that day passing loses it, unless a login is linked first.
     */
    async continueAsGuest(): Promise<EmbeddedWalletCredential> {
      const sessionPublicKey = await wallet.newSessionKey()
      const answer = await backend.post<BackendAccount & { sessionExpiresAt: string }>('/auth/guest', {
        sessionPublicKey,
        sessionSeconds: GUEST_SESSION_SECONDS,
      })
      return finishSignIn(answer, 'guest', sessionPublicKey, GUEST_SESSION_SECONDS)
    },

    /** Signs in with a session JWT the caller obtained (passkey or recovery stamp_login). */
    async signInWithSession(
      session: string,
      kind: 'passkey' | 'recovery',
      sessionPublicKey: string,
      seconds: number,
      recovery?: RecoveryState,
    ): Promise<EmbeddedWalletCredential> {
      const account = await backend.post<BackendAccount>('/auth/login', { session, kind })
      return finishSignIn(account, kind, sessionPublicKey, seconds, recovery)
    },

    /**
     * Registers a passkey-backed account through the backend; the new session key is its first API
     * key. An email is proven first (security review H2): the backend has the kms email it a code,
     * which the user types in the consent frame (never in this page), and the sign-up carries the
     * sealed code. Cancelling in the frame is `ProviderRpcError` 4001; a wrong or expired code
     * `invalid_code`; an email that has an account already `email_exists`.
     */
    async signUpWithAttestation(parameters: {
      email?: string | undefined
      passkeyIdentifier?: string | undefined
      challenge: string
      attestation: unknown
    }): Promise<EmbeddedWalletCredential> {
      const sessionPublicKey = await wallet.newSessionKey()
      const { email } = parameters
      let proof = {}
      if (email !== undefined) {
        const sent = await backend.post<{ otpId: string; otpEncryptionTargetBundle: string }>('/auth/passkey/signup/start', { email })
        const sealed = await signer.collectOtp({ targetBundle: sent.otpEncryptionTargetBundle, email, otpId: sent.otpId })
        proof = { otpId: sent.otpId, encryptedOtpBundle: sealed.encryptedOtpBundle }
      }
      const account = await backend.post<BackendAccount>('/auth/passkey/signup', { ...parameters, ...proof, sessionPublicKey, sessionSeconds })
      return finishSignIn(account, 'passkey', sessionPublicKey, sessionSeconds)
    },

    /** A fresh session key for a sign-in to register: the consent frame's new key (its old one is forgotten). */
    async newSessionKey(): Promise<string> {
      await signingOut
      return signer.newKey()
    },

    withSession,

    /** EIP-191 personal message, approved in the consent frame; the kms hashes the preimage (CONTRACT25). */
    signMessage({ message, signWith }: { message: SignableMessage; signWith?: string | undefined }): Promise<Hex> {
      return signMessage(message, signWith ?? record?.credential.address)
    },
    /** EIP-712 typed data, approved in the consent frame; the kms hashes the typed data (CONTRACT25). */
    signTypedData({ typedData, signWith }: { typedData: TypedDataDefinition; signWith?: string | undefined }): Promise<Hex> {
      return signTypedData(typedData, signWith ?? record?.credential.address)
    },
    signTransaction({ transaction, signWith }: { transaction: TransactionSerializable; signWith?: string | undefined }): Promise<Hex> {
      return signTransaction(transaction, signWith ?? record?.credential.address)
    },
    ...permissionsOf(context, signing),
    ...callsOf(context, signing),

    /** The chain the wallet signs for. */
    get chainId(): number {
      return record?.chainId ?? options.chains[0].id
    },
    /** Network switching is local: among the configured chains. */
    switchChain(chainId: number): Chain {
      const chain = chainOf(chainId)
      if (record) write(withSmartAccount({ ...record, chainId }))
      return chain
    },

    ...keysOf(context),
    ...linksOf(context),
    /** @internal What account linking (linking.ts) carries its proofs with: the backend. */
    linkingPort: linkingPortOf(context),
    ...recoveryOf(context, {
      newSessionKey: (): Promise<string> => wallet.newSessionKey(),
      signInWithSession: (...parameters): Promise<EmbeddedWalletCredential> => wallet.signInWithSession(...parameters),
    }),

    signOut,
  }
  return wallet
}

export type EmbeddedWallet = ReturnType<typeof createEmbeddedWallet>

function memoryStorage(): KeyValueStorage {
  const values = new Map<string, string>()
  return { getItem: (key) => values.get(key) ?? null, setItem: (key, value) => void values.set(key, value), removeItem: (key) => void values.delete(key) }
}
