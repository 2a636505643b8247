import { TurnkeyClient, TurnkeyRequestError } from '@turnkey/http'
import {
  type Chain,
  createClient,
  getAddress,
  type Hex,
  hashMessage,
  hashTypedData,
  http,
  type SignableMessage,
  serializeSignature,
  serializeTransaction,
  type TransactionSerializable,
  type TypedDataDefinition,
} from 'viem'
import { prepareTransactionRequest } from 'viem/actions'
import { type Backend, type BackendAccount, type BackendConfig, createBackend } from './backend.js'
import {
  AccountNotFoundError,
  ActivityStatusError,
  ClientsNotFoundError,
  ConsensusNeededError,
  EmbeddedError,
  InvalidCodeError,
  isSessionKeyExpired,
  KmsRequestError,
  MissingAppNameError,
  MissingBaseUrlError,
  MissingSignWithError,
  SessionError,
  SessionKeyRegistrationError,
  SignRawPayloadResultNotFoundError,
  SubOrganizationNotFoundError,
} from './errors.js'
import { indexedDbSessionKeys, type SessionKeyStore, type Stamper } from './sessionKeys.js'

/** SPEC §3: the embedded wallet credential. */
export type EmbeddedWalletCredential = {
  address: `0x${string}`
  /** The wallet account's id in the key-management service. */
  id: string
  /** CAIP-2 chain of the account, e.g. `eip155:1`. */
  chain: string
  walletName: string
  /** The key-management wallet the account derives from. */
  signerRefId: string
  walletProperties: { turnkeySubOrganizationId: string; isSessionKeyCompatible: boolean }
  smartWalletRefAddress?: `0x${string}` | undefined
  smartWalletRefId?: string | undefined
}

/** SPEC §3: the session key pair. The private key stays in the key store, never here. */
export type SessionKey = { publicKey: string; expirationDate: string }

/** SPEC §3: how an account is recovered: by an emailed API key, or a new passkey registered with an emailed recover-user key. */
export type RecoveryType = 'email' | 'passkey'

/** SPEC §3: where an account recovery stands. */
export type RecoveryState = { recoveryType: RecoveryType; recoveryUserId: string; createdAt: string; sessionExpiration: string }

/** How the user signed in. */
export type SignInKind = 'email' | 'passkey' | 'recovery' | 'oauth'

/** What survives a reload (localStorage): everything but the private key. */
export type StoredWallet = {
  credential: EmbeddedWalletCredential
  userId: string
  organizationId: string
  kind: SignInKind
  session: SessionKey
  recovery?: RecoveryState | undefined
  chainId: number
}

/** localStorage-like storage. */
export type KeyValueStorage = { getItem(key: string): string | null; setItem(key: string, value: string): void; removeItem(key: string): void }

export type EmbeddedWalletOptions = {
  /** Shown in sign-in emails and passkey prompts. Required (SPEC §5). */
  appName: string
  /** The app backend (@latchkey/server): sign-in, session keys, recovery. */
  backendUrl: string
  /** The key-management API base url. Default: what the backend's /auth/config says. */
  kmsUrl?: string | undefined
  /** The parent organization. Default: what the backend's /auth/config says. */
  organizationId?: string | undefined
  /** Where the export, import and recovery frames are served. Default: the backend's /auth/config. */
  framesUrl?: string | undefined
  /** Chains the wallet signs for; the first is the default. Each needs an RPC url. */
  chains: readonly [Chain, ...Chain[]]
  /** Lifetime of a session key. Default 900 s, as the hosted SDKs. */
  sessionSeconds?: number | undefined
  /** Lifetime of an email recovery session. Default 1800 s (SPEC §5). */
  recoverySessionSeconds?: number | undefined
  /** Where the wallet record is kept. Default: localStorage. */
  storage?: KeyValueStorage | undefined
  /** Where the session key lives. Default: IndexedDB, non-extractable. */
  sessionKeys?: SessionKeyStore | undefined
  /** Clock in unix ms. */
  now?: (() => number) | undefined
  fetch?: typeof fetch | undefined
}

/** SPEC §5 and §9 constants. */
export const RECOVERY_CODE_SECONDS = 900
export const RECOVERY_SESSION_SECONDS = 1800
export const DEFAULT_SESSION_SECONDS = 900
export const WALLET_NAMES = ['Turnkey', 'Turnkey HD'] as const
const STORAGE_KEY = 'latchkey.embedded.wallet'
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
const ETHEREUM_ACCOUNT = {
  curve: 'CURVE_SECP256K1',
  pathFormat: 'PATH_FORMAT_BIP32',
  path: "m/44'/60'/0'/0/0",
  addressFormat: 'ADDRESS_FORMAT_ETHEREUM',
} as const

type Activity = { status: string; result: Record<string, unknown>; failure?: { message?: string } | undefined }

/**
 * An embedded wallet: signs in by email code or passkey through the app backend, keeps a session
 * key, and signs through the key-management API with the official `@turnkey/http` client. When
 * the session key has expired (or was revoked) it removes it, registers a new one through the
 * backend and retries the action once (SPEC §4).
 *
 * @example
 * const wallet = createEmbeddedWallet({ appName: 'Demo', backendUrl: 'http://localhost:8787', chains: [anvil] })
 * const { otpId } = await wallet.startEmail('ada@example.com')
 * await wallet.verifyEmail({ otpId, code: '123456' })
 * const signature = await wallet.signMessage({ message: 'hello' })
 */
export function createEmbeddedWallet(options: EmbeddedWalletOptions) {
  if (!options.appName) throw new MissingAppNameError()
  if (!options.backendUrl) throw new MissingBaseUrlError({ details: 'backendUrl is required' })
  const now = options.now ?? Date.now
  const sessionSeconds = options.sessionSeconds ?? DEFAULT_SESSION_SECONDS
  const recoverySessionSeconds = options.recoverySessionSeconds ?? RECOVERY_SESSION_SECONDS
  const storage = options.storage ?? (typeof localStorage === 'undefined' ? memoryStorage() : localStorage)
  const sessionKeys = options.sessionKeys ?? indexedDbSessionKeys()
  const backend: Backend = createBackend(options.backendUrl, options.fetch)
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

  async function client(stamper: Stamper = sessionKeys.stamper): Promise<TurnkeyClient> {
    const { kmsUrl } = await settings()
    if (!kmsUrl) throw new MissingBaseUrlError()
    return new TurnkeyClient({ baseUrl: kmsUrl }, stamper)
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

  /** The user's Ethereum account in their sub-organization, as the SPEC §3 credential. */
  async function credentialOf(organizationId: string, address: string | undefined, kms: TurnkeyClient): Promise<EmbeddedWalletCredential> {
    if (!organizationId) throw new SubOrganizationNotFoundError()
    const { accounts } = await kmsCall(() => kms.getWalletAccounts({ organizationId }))
    const wanted = address?.toLowerCase()
    const account = accounts.find(
      (candidate) => candidate.addressFormat === 'ADDRESS_FORMAT_ETHEREUM' && (!wanted || candidate.address.toLowerCase() === wanted),
    )
    if (!account) throw new AccountNotFoundError({ details: `No Ethereum account in sub-organization ${organizationId}` })
    const { wallet } = await kmsCall(() => kms.getWallet({ organizationId, walletId: account.walletId }))
    return {
      address: getAddress(account.address),
      id: account.walletAccountId,
      chain: `eip155:${options.chains[0].id}`,
      walletName: wallet.walletName,
      signerRefId: account.walletId,
      walletProperties: { turnkeySubOrganizationId: organizationId, isSessionKeyCompatible: true },
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
    const credential = await credentialOf(account.organizationId, account.address, await client())
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
   * Removes the session key, registers a new one through the backend (its session cookie vouches
   * for the user) and keeps it: a new session, not a restored one.
   */
  async function refreshSession(): Promise<SessionKey> {
    const current = signedIn()
    if (current.recovery && Date.parse(current.recovery.sessionExpiration) <= now()) {
      await signOut()
      throw new SessionError({ details: 'The recovery session has expired; sign in again.' })
    }
    // create() replaces the stored key: the old one is removed with it (SPEC §4).
    const publicKey = await sessionKeys.create()
    try {
      const { expiresAt } = await backend.post<{ expiresAt: string }>('/auth/session-key', { publicKey, expirationSeconds: sessionSeconds })
      const session = { publicKey, expirationDate: expiresAt }
      write({ ...current, session })
      return session
    } catch (error) {
      throw new SessionKeyRegistrationError({ cause: error })
    }
  }

  /** Runs a stamped action; on an expired or unknown session key, a new session and one retry. */
  async function withSession<result>(action: (kms: TurnkeyClient) => Promise<result>): Promise<result> {
    signedIn()
    const kms = await client()
    try {
      return await action(kms)
    } catch (error) {
      if (!isSessionKeyExpired(error)) throw error
      await refreshSession()
      return action(kms)
    }
  }

  /** Submits an activity stamped by the session key (one refresh and retry) and answers its result under `key`. */
  async function submit<result>(key: string, call: (kms: TurnkeyClient) => Promise<{ activity: Activity }>): Promise<result | undefined> {
    const result = await withSession(async (kms) => completed(await kmsCall(() => call(kms))))
    return result[key] as result | undefined
  }

  async function sign(hash: Hex, signWith: string | undefined): Promise<Hex> {
    if (!signWith) throw new MissingSignWithError()
    const { organizationId } = signedIn()
    const result = await submit<{ r?: string; s?: string; v?: string }>('signRawPayloadResult', (kms) =>
      kms.signRawPayload({
        type: 'ACTIVITY_TYPE_SIGN_RAW_PAYLOAD_V2',
        timestampMs: String(now()),
        organizationId,
        parameters: { signWith, payload: hash, encoding: 'PAYLOAD_ENCODING_HEXADECIMAL', hashFunction: 'HASH_FUNCTION_NO_OP' },
      }),
    )
    const signature = result
    if (!signature?.r || !signature.s || signature.v === undefined) throw new SignRawPayloadResultNotFoundError()
    return serializeSignature({ r: `0x${signature.r}`, s: `0x${signature.s}`, yParity: Number.parseInt(signature.v, 16) % 27 })
  }

  async function signTransaction(transaction: TransactionSerializable, signWith: string | undefined): Promise<Hex> {
    if (!signWith) throw new MissingSignWithError()
    const { organizationId } = signedIn()
    const result = await submit<{ signedTransaction?: string }>('signTransactionResult', (kms) =>
      kms.signTransaction({
        type: 'ACTIVITY_TYPE_SIGN_TRANSACTION_V2',
        timestampMs: String(now()),
        organizationId,
        parameters: { signWith, unsignedTransaction: serializeTransaction(transaction).slice(2), type: 'TRANSACTION_TYPE_ETHEREUM' },
      }),
    )
    const signed = result?.signedTransaction
    if (!signed) throw new SignRawPayloadResultNotFoundError({ details: 'sign_transaction returned no signed transaction' })
    return (signed.startsWith('0x') ? signed : `0x${signed}`) as Hex
  }

  /**
   * A client stamped by an emailed recovery credential, once the credential proves good (SPEC §5):
   * the matching key (the one that stamps) exists for the user, is the credential type the
   * recovery needs (an API key for email, a recover-user key for passkey), and was created within
   * 900 s. Anything else is "The code is invalid or expired." and nothing is written.
   */
  async function recoveryClient(
    recoveryStamper: Stamper,
    recovery: { organizationId: string; userId: string; recoveryType: RecoveryType },
  ): Promise<TurnkeyClient> {
    const kms = await client(recoveryStamper)
    let apiKeys: { credential: { publicKey: string; type: string }; createdAt: { seconds: string; nanos?: string } }[]
    let publicKey: string
    try {
      publicKey = await stampingKey(recoveryStamper)
      ;({ apiKeys } = await kms.getApiKeys({ organizationId: recovery.organizationId, userId: recovery.userId }))
    } catch (error) {
      throw new InvalidCodeError({ cause: error })
    }
    const key = apiKeys.find((candidate) => candidate.credential.publicKey === publicKey)
    const wanted = RECOVERY_CREDENTIALS[recovery.recoveryType]
    if (!key) throw new InvalidCodeError({ details: 'No credential of this user matches the code' })
    if (key.credential.type !== wanted) throw new InvalidCodeError({ details: `The code is a ${key.credential.type}, not a ${wanted}` })
    const createdAt = Number(key.createdAt.seconds) * 1000 + Math.floor(Number(key.createdAt.nanos ?? 0) / 1_000_000)
    if (now() - createdAt > RECOVERY_CODE_SECONDS * 1000) throw new InvalidCodeError({ details: `The code is older than ${RECOVERY_CODE_SECONDS} s` })
    return kms
  }

  async function signOut(): Promise<void> {
    write(undefined)
    await sessionKeys.clear().catch(() => undefined)
    await backend.post('/auth/signout', {}).catch(() => undefined)
  }

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

    /** Emails a sign-in code; creates the user's wallet on their first sign-in. */
    async startEmail(email: string): Promise<{ otpId: string }> {
      return backend.post<{ otpId: string }>('/auth/email/start', { email })
    },

    /**
     * Redeems the code for a new session key: the key is made here, non-extractable, and only its
     * public half goes to the backend, which registers it for the user.
     */
    async verifyEmail({ otpId, code }: { otpId: string; code: string }): Promise<EmbeddedWalletCredential> {
      const sessionPublicKey = await wallet.newSessionKey()
      const answer = await backend.post<BackendAccount & { sessionExpiresAt: string }>('/auth/email/verify', {
        otpId,
        code: code.trim(),
        sessionPublicKey,
        sessionSeconds,
      })
      return finishSignIn(answer, 'email', sessionPublicKey, sessionSeconds)
    },

    /**
     * Restores a stored sign-in after a reload: the session key must still be in the key store.
     * An expired key is replaced through the backend; without either, the wallet is signed out.
     */
    async restore(): Promise<StoredWallet | undefined> {
      if (!record) return undefined
      const stored = await sessionKeys.publicKey().catch(() => undefined)
      if (stored !== record.session.publicKey || Date.parse(record.session.expirationDate) <= now()) {
        try {
          await refreshSession()
        } catch {
          await signOut()
          return undefined
        }
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

    /** Registers a passkey-backed account through the backend; the new session key is its first API key. */
    async signUpWithAttestation(parameters: {
      email?: string | undefined
      passkeyIdentifier?: string | undefined
      challenge: string
      attestation: unknown
    }): Promise<EmbeddedWalletCredential> {
      const sessionPublicKey = await sessionKeys.create()
      const account = await backend.post<BackendAccount>('/auth/passkey/signup', { ...parameters, sessionPublicKey, sessionSeconds })
      return finishSignIn(account, 'passkey', sessionPublicKey, sessionSeconds)
    },

    /** A fresh session key for a sign-in that stamps `stamp_login` itself (passkey, recovery). */
    newSessionKey(): Promise<string> {
      return sessionKeys.create()
    },

    refreshSession,
    withSession,

    /** EIP-191 personal message, hashed here with viem and signed as a raw payload. */
    signMessage({ message, signWith }: { message: SignableMessage; signWith?: string | undefined }): Promise<Hex> {
      return sign(hashMessage(message), signWith ?? record?.credential.address)
    },
    /** EIP-712 typed data, hashed here with viem and signed as a raw payload. */
    signTypedData({ typedData, signWith }: { typedData: TypedDataDefinition; signWith?: string | undefined }): Promise<Hex> {
      return sign(hashTypedData(typedData), signWith ?? record?.credential.address)
    },
    signTransaction({ transaction, signWith }: { transaction: TransactionSerializable; signWith?: string | undefined }): Promise<Hex> {
      return signTransaction(transaction, signWith ?? record?.credential.address)
    },
    /** Fills nonce, gas and fees from the chain, signs through the kms and broadcasts. */
    async sendTransaction(request: {
      to?: `0x${string}` | null | undefined
      value?: bigint | undefined
      data?: Hex | undefined
      gas?: bigint | undefined
      nonce?: number | undefined
      maxFeePerGas?: bigint | undefined
      maxPriorityFeePerGas?: bigint | undefined
      gasPrice?: bigint | undefined
    }): Promise<Hex> {
      const { credential, chainId } = signedIn()
      const chain = chainOf(chainId)
      // A bare client with the one action it needs: not every public action in the lazy chunk.
      const publicClient = createClient({ chain, transport: http(chain.rpcUrls.default.http[0]) })
      const prepared = await prepareTransactionRequest(publicClient, { ...request, account: credential.address, chain } as Parameters<
        typeof prepareTransactionRequest
      >[1])
      const { account: _account, from: _from, parameters: _parameters, chainId: _chainId, ...fields } = prepared as Record<string, unknown>
      const signed = await signTransaction({ ...(fields as TransactionSerializable), chainId: chain.id }, credential.address)
      return publicClient.request({ method: 'eth_sendRawTransaction', params: [signed] })
    },

    /** The chain the wallet signs for. */
    get chainId(): number {
      return record?.chainId ?? options.chains[0].id
    },
    /** Network switching is local: among the configured chains. */
    switchChain(chainId: number): Chain {
      const chain = chainOf(chainId)
      if (record) write({ ...record, chainId })
      return chain
    },

    /** The Ethereum accounts of the signed-in user's wallet, in derivation order. */
    async accounts(): Promise<`0x${string}`[]> {
      const { organizationId, credential } = signedIn()
      const { accounts } = await withSession((kms) => kmsCall(() => kms.getWalletAccounts({ organizationId, walletId: credential.signerRefId })))
      return accounts.filter((account) => account.addressFormat === 'ADDRESS_FORMAT_ETHEREUM').map((account) => getAddress(account.address))
    },

    /** Derives the wallet's next Ethereum account (m/44'/60'/0'/0/i) and switches to it. */
    async addAccount(): Promise<EmbeddedWalletCredential> {
      const { organizationId, credential } = signedIn()
      const index = (await wallet.accounts()).length
      const result = await submit<{ addresses: string[] }>('createWalletAccountsResult', (kms) =>
        kms.createWalletAccounts({
          type: 'ACTIVITY_TYPE_CREATE_WALLET_ACCOUNTS',
          timestampMs: String(now()),
          organizationId,
          parameters: { walletId: credential.signerRefId, accounts: [{ ...ETHEREUM_ACCOUNT, path: `m/44'/60'/0'/0/${index}` }] },
        }),
      )
      const address = result!.addresses[0]!
      return wallet.selectAccount(address)
    },

    /** Switches to another account of the user's wallet; the provider announces `accountsChanged`. */
    async selectAccount(address: string): Promise<EmbeddedWalletCredential> {
      const current = signedIn()
      const next = await withSession((kms) => credentialOf(current.organizationId, address, kms))
      write({ ...signedIn(), credential: next })
      return next
    },

    /** Passkey registration for the signed-in user (create_authenticators), stamped by the session key. */
    async addAuthenticator(parameters: {
      authenticatorName: string
      challenge: string
      attestation: { credentialId: string; clientDataJson: string; attestationObject: string; transports: string[] }
    }): Promise<string> {
      const { userId, organizationId } = signedIn()
      const result = await submit<{ authenticatorIds: string[] }>('createAuthenticatorsResult', (kms) =>
        kms.createAuthenticators({
          type: 'ACTIVITY_TYPE_CREATE_AUTHENTICATORS_V2',
          timestampMs: String(now()),
          organizationId,
          parameters: { userId, authenticators: [parameters as never] },
        }),
      )
      return result!.authenticatorIds[0]!
    },

    /** The export bundle of the user's wallet, encrypted to `targetPublicKey` (the export frame's key). */
    async exportBundle(targetPublicKey: string): Promise<string> {
      const { organizationId, credential } = signedIn()
      const result = await submit<{ exportBundle: string }>('exportWalletResult', (kms) =>
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
      const result = await submit<{ importBundle: string }>('initImportWalletResult', (kms) =>
        kms.initImportWallet({ type: 'ACTIVITY_TYPE_INIT_IMPORT_WALLET', timestampMs: String(now()), organizationId, parameters: { userId } }),
      )
      return result!.importBundle
    },

    /** Imports the wallet the import frame encrypted; answers its first Ethereum address. */
    async importWallet(encryptedBundle: string, walletName: string): Promise<`0x${string}`> {
      const { organizationId, userId } = signedIn()
      const result = await submit<{ addresses: string[] }>('importWalletResult', (kms) =>
        kms.importWallet({
          type: 'ACTIVITY_TYPE_IMPORT_WALLET',
          timestampMs: String(now()),
          organizationId,
          parameters: { userId, walletName, encryptedBundle, accounts: [ETHEREUM_ACCOUNT] },
        }),
      )
      return getAddress(result!.addresses[0]!)
    },

    /**
     * Starts a recovery (SPEC §5): the backend has the kms email a code, a credential bundle
     * encrypted to `targetPublicKey` (the recovery frame's key) and valid 900 s. For `'email'` the
     * credential is an API key (email_auth); for `'passkey'` a recover-user key
     * (init_user_email_recovery), with which `recoverUser` registers a new passkey.
     */
    async startRecovery(
      email: string,
      targetPublicKey: string,
      recoveryType: RecoveryType = 'email',
    ): Promise<{ organizationId: string; userId: string; recoveryType: RecoveryType }> {
      const started = await backend.post<{ organizationId: string; userId: string }>('/auth/recovery/start', { email, targetPublicKey, recoveryType })
      return { organizationId: started.organizationId, userId: started.userId, recoveryType }
    },

    /**
     * Finishes email recovery with a client stamped by the emailed credential (the recovery frame):
     * it must be an API key of the user, created within 900 s (SPEC §5); then a new session key
     * signs in for the recovery session (default 1800 s), active only until it expires (SPEC §4).
     */
    async finishRecovery(
      recoveryStamper: Stamper,
      recovery: { organizationId: string; userId: string; recoveryType?: RecoveryType | undefined },
    ): Promise<EmbeddedWalletCredential> {
      if ((recovery.recoveryType ?? 'email') !== 'email')
        throw new InvalidCodeError({ details: 'A passkey recovery code registers a new passkey; use recoverUser' })
      const kms = await recoveryClient(recoveryStamper, { ...recovery, recoveryType: 'email' })
      const publicKey = await wallet.newSessionKey()
      const login = completed(
        await kmsCall(() =>
          kms.stampLogin({
            type: 'ACTIVITY_TYPE_STAMP_LOGIN',
            timestampMs: String(now()),
            organizationId: recovery.organizationId,
            parameters: { publicKey, expirationSeconds: String(recoverySessionSeconds) },
          }),
        ),
      )
      const session = (login['stampLoginResult'] as { session: string }).session
      const createdAt = new Date(now())
      return wallet.signInWithSession(session, 'recovery', publicKey, recoverySessionSeconds, {
        recoveryType: 'email',
        recoveryUserId: recovery.userId,
        createdAt: createdAt.toISOString(),
        sessionExpiration: new Date(createdAt.getTime() + recoverySessionSeconds * 1000).toISOString(),
      })
    },

    /**
     * Passkey recovery (SPEC §5, §7): with the emailed recover-user key (created within 900 s),
     * `recover_user` registers a new passkey (authenticator, userId) for the user. The caller then
     * signs in with that passkey (`passkeyFlows(...).recover` does both).
     */
    async recoverUser(
      recoveryStamper: Stamper,
      recovery: { organizationId: string; userId: string },
      authenticator: { authenticatorName: string; challenge: string; attestation: PasskeyAttestationParams },
    ): Promise<string> {
      const kms = await recoveryClient(recoveryStamper, { ...recovery, recoveryType: 'passkey' })
      const result = completed(
        await kmsCall(() =>
          kms.recoverUser({
            type: 'ACTIVITY_TYPE_RECOVER_USER',
            timestampMs: String(now()),
            organizationId: recovery.organizationId,
            parameters: { userId: recovery.userId, authenticator: authenticator as never },
          }),
        ),
      )
      const ids = (result['recoverUserResult'] as { authenticatorId?: string[] } | undefined)?.authenticatorId
      if (!ids?.[0]) throw new InvalidCodeError({ details: 'recover_user registered no passkey' })
      return ids[0]
    },

    /** Marks the signed-in wallet as recovered by passkey (SPEC §3 recovery state). */
    markPasskeyRecovery(userId: string): void {
      const current = signedIn()
      write({
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
      const recovery = record?.recovery
      return recovery?.recoveryType === 'email' && Date.parse(recovery.sessionExpiration) > now()
    },

    signOut,
  }
  return wallet
}

export type EmbeddedWallet = ReturnType<typeof createEmbeddedWallet>

/** SPEC §4: COMPLETED → the result; CONSENSUS_NEEDED → a consensus error; anything else → an activity error. */
export function completed(response: { activity: Activity }): Record<string, unknown> {
  const { status, result, failure } = response.activity
  if (status === 'ACTIVITY_STATUS_COMPLETED') return result
  if (status === 'ACTIVITY_STATUS_CONSENSUS_NEEDED') throw new ConsensusNeededError()
  throw new ActivityStatusError(status, { details: failure?.message })
}

/** A key-management call whose refusal becomes "Turnkey error {code}: {message}". */
export async function kmsCall<result>(call: () => Promise<result>): Promise<result> {
  try {
    return await call()
  } catch (error) {
    if (error instanceof TurnkeyRequestError) {
      const message = error.message.replace(/^Turnkey error \d+: /, '').replace(/ \(Details: .*\)$/s, '')
      throw new KmsRequestError(Number(error.code), message, { cause: error })
    }
    // fetch's own failure; anything else (a passkey prompt closed, ...) is the caller's to read.
    if (!(error instanceof TypeError)) throw error
    throw new EmbeddedError('kms_unreachable', 'The key-management service is unreachable.', {
      details: error instanceof Error ? error.message : String(error),
      cause: error,
    })
  }
}

function memoryStorage(): KeyValueStorage {
  const values = new Map<string, string>()
  return { getItem: (key) => values.get(key) ?? null, setItem: (key, value) => void values.set(key, value), removeItem: (key) => void values.delete(key) }
}
