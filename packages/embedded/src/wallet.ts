import { RECOVERY_CODE_VALIDITY_S, RECOVERY_SESSION_EXPIRY_S } from '@latchkey/constants'
import {
  type Address,
  type Chain,
  concatHex,
  getAddress,
  getTypesForEIP712Domain,
  type Hex,
  pad,
  type SignableMessage,
  type SignedAuthorization,
  serializeTypedData,
  stringToHex,
  type TransactionSerializable,
  type TypedDataDefinition,
  toHex,
  toPrefixedMessage,
} from 'viem'
import { type Backend, type BackendAccount, type BackendConfig, createBackend } from './backend.js'
import { callsWatcher } from './callsWatch.js'
import type { ConsentWalletRequest, MfaCarried, MfaSubmit } from './consentFrame.js'
import {
  AccountNotFoundError,
  ActivityStatusError,
  CannotProceedError,
  ClientsNotFoundError,
  ConsensusNeededError,
  EmbeddedError,
  InvalidCodeError,
  isSessionKeyExpired,
  KmsRequestError,
  MalformedGrantError,
  MfaRequiredError,
  MissingAppNameError,
  MissingBaseUrlError,
  MissingSignWithError,
  ProviderRpcError,
  SessionError,
  SignRawPayloadResultNotFoundError,
  SubOrganizationNotFoundError,
} from './errors.js'
import { BATCH_EXECUTOR_ADDRESS } from './executor.js'
import { createTurnkeyClient, postStamped, type TurnkeyClient, TurnkeyRequestError } from './kmsClient.js'
import type { KmsGrant, PermissionResponse } from './permissions.js'
import { freshVerification } from './reverify.js'
import type { SessionKeyStore, Stamper } from './sessionKeys.js'
import { consentSigner, testOnlySigner } from './signers.js'
import type { AtomicStatus, BatchCall, PaymasterService, SmartAccountContext } from './smartAccount.js'
import type { Sponsorship, UserOperationContext } from './userOperations.js'

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
  walletProperties: {
    turnkeySubOrganizationId: string
    /**
     * Whether the wallet signs with its session key, without a passkey prompt per signature:
     * the key-management service lists the session's public key as an unexpired API key of the
     * user. Computed at sign-in and on account changes.
     */
    isSessionKeyCompatible: boolean
  }
  /**
   * The smart account's address, when the account is one on the current chain: with EIP-7702 the
   * account itself (it delegates to the batch executor, so the address does not change).
   * `undefined` until the account is upgraded on this chain.
   */
  smartWalletRefAddress?: `0x${string}` | undefined
  /**
   * What the smart account runs, as a CAIP-10 id: `eip155:<chainId>:<executor>`, the contract the
   * account delegates to on the current chain. `undefined` until upgraded there.
   */
  smartWalletRefId?: string | undefined
}

/** A transaction the wallet fills, signs through the kms and broadcasts. */
export type TransactionRequest = {
  to?: `0x${string}` | null | undefined
  value?: bigint | undefined
  data?: Hex | undefined
  gas?: bigint | undefined
  nonce?: number | undefined
  maxFeePerGas?: bigint | undefined
  maxPriorityFeePerGas?: bigint | undefined
  gasPrice?: bigint | undefined
  /** EIP-7702 authorizations to carry (a type-4 transaction). */
  authorizationList?: readonly SignedAuthorization[] | undefined
  type?: 'eip7702' | undefined
}

/** SPEC §3: the session key pair. The private key stays in the key store, never here. */
export type SessionKey = { publicKey: string; expirationDate: string }

/** A sign-in code on its way (`startEmail`): what `verifyEmail` hands the consent frame. */
export type EmailCodeSent = { readonly otpId: string; readonly otpEncryptionTargetBundle: string; readonly email: string }

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
  /** By chain id: the contract the account delegates to there (EIP-7702), as last read from the chain. */
  delegations?: Record<string, Address> | undefined
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
  /** Lifetime of a session key (the consent frame's key as the kms's API key). Default 43200 s (12 h). */
  sessionSeconds?: number | undefined
  /**
   * The passkey relying party, for re-verification: a user with a passkey confirms it is them with
   * it when the kms wants a fresh verification (export, a new passkey). Default: the page's host
   * name. Without one (or without WebAuthn) the user re-verifies with an emailed code.
   */
  rpId?: string | undefined
  /** Lifetime of an email recovery session. Default 1800 s (SPEC §5). */
  recoverySessionSeconds?: number | undefined
  /** Where the wallet record is kept. Default: localStorage. */
  storage?: KeyValueStorage | undefined
  /**
   * Node tests only: a key that stamps every request itself, with no consent frame and no user's
   * approval. Never set it in an app: in a browser the wallet's key lives in the consent frame on
   * the kms frames origin, which stamps an activity only after the user's Approve there.
   */
  testOnlySessionKeys?: SessionKeyStore | undefined
  /**
   * The EIP-7702 batch executor the account delegates to for atomic batches. Default:
   * {@link BATCH_EXECUTOR_ADDRESS} (the same on every chain with the CREATE2 proxy). `null` turns
   * smart accounts off: batches go one transaction per call.
   */
  batchExecutor?: Address | null | undefined
  /**
   * Sponsored gas (ERC-7677): `sendTransaction` and `sendCalls` go as ERC-4337 UserOperations
   * through the chain's bundler with the paymaster's data. A refusal is SponsorshipUnavailableError
   * and nothing is sent, unless `fallback: 'user-pays'`. See {@link Sponsorship}.
   */
  sponsorship?: Sponsorship | undefined
  /** Clock in unix ms. */
  now?: (() => number) | undefined
  fetch?: typeof fetch | undefined
}

/** SPEC §5 and §9 constants, from the one module that holds them. */
export {
  RECOVERY_CODE_VALIDITY_S as RECOVERY_CODE_SECONDS,
  RECOVERY_SESSION_EXPIRY_S as RECOVERY_SESSION_SECONDS,
  WALLET_NAMES,
} from '@latchkey/constants'
/**
 * Lifetime of a session key unless configured: 12 hours (not a SPEC §9 value). No route renews a
 * key (a page-chosen key was the H1 hole), so its end means signing in again: a working day. It is
 * within the kms's default `--max-credential-lifetime` (86400 s) and the backend's cap (86400 s),
 * and within the frame's own 48 h key lifetime. Without the user's Approve in the frame the key
 * stamps nothing but read-only queries, so a longer life adds no silent signing.
 */
export const DEFAULT_SESSION_SECONDS = 43_200
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

/** A value as JSON-RPC carries it: bigints as hex quantities (what the frame shows the user). */
function rpcJson(value: unknown): unknown {
  return JSON.parse(JSON.stringify(value, (_key, item: unknown) => (typeof item === 'bigint' ? toHex(item) : item)) ?? 'null')
}

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
  const batchExecutor = options.batchExecutor === undefined ? BATCH_EXECUTOR_ADDRESS : options.batchExecutor
  const sessionSeconds = options.sessionSeconds ?? DEFAULT_SESSION_SECONDS
  const recoverySessionSeconds = options.recoverySessionSeconds ?? RECOVERY_SESSION_EXPIRY_S
  const storage = options.storage ?? (typeof localStorage === 'undefined' ? memoryStorage() : localStorage)
  const backend: Backend = createBackend(options.backendUrl, options.fetch)
  const signer = options.testOnlySessionKeys ? testOnlySigner(options.testOnlySessionKeys) : consentSigner(async () => (await settings()).framesUrl)
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
    const result = await withSession(() =>
      fresh.freshly(async (passkey) => {
        const { credential, chainId } = signedIn()
        const kms = await client(passkey ?? signer.approve(consent, { account: credential.address, chainId }))
        return completed(await kmsCall(() => call(kms)))
      }),
    )
    return result[key] as result | undefined
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

  /**
   * sign_raw_payload V2 in an encoding the kms reads (CONTRACT25: the EIP-191 preimage, EIP-712
   * JSON, an EIP-7702 authorization), approved as `consent`: r ‖ s ‖ v.
   */
  async function signRaw(
    consent: ConsentWalletRequest,
    parameters: { payload: string; encoding: string; hashFunction: string },
    signWith: string | undefined,
  ): Promise<Hex> {
    if (!signWith) throw new MissingSignWithError()
    const { organizationId } = signedIn()
    const result = await submit<{ r?: string; s?: string; v?: string }>('signRawPayloadResult', consent, (kms) =>
      kms.signRawPayload({
        type: 'ACTIVITY_TYPE_SIGN_RAW_PAYLOAD_V2',
        timestampMs: String(now()),
        organizationId,
        parameters: { signWith, ...parameters } as never,
      }),
    )
    const signature = result
    if (!signature?.r || !signature.s || signature.v === undefined) throw new SignRawPayloadResultNotFoundError()
    // r ‖ s ‖ v with v = 27 + yParity, as viem's serializeSignature writes it (without the curve
    // arithmetic it loads to normalise r and s, which the kms already sends as 32-byte values).
    const v = Number.parseInt(signature.v, 16) % 27 ? '0x1c' : '0x1b'
    return concatHex([pad(`0x${signature.r}`, { size: 32 }), pad(`0x${signature.s}`, { size: 32 }), v])
  }

  /** EIP-191: the kms hashes the preimage itself, so it (and its policies) read the message. */
  function signMessage(message: SignableMessage, signWith: string | undefined): Promise<Hex> {
    const data = typeof message === 'string' ? stringToHex(message) : typeof message.raw === 'string' ? message.raw : toHex(message.raw)
    return signRaw(
      { method: 'personal_sign', params: [data, signWith] },
      { payload: toPrefixedMessage(message).slice(2), encoding: 'PAYLOAD_ENCODING_HEXADECIMAL', hashFunction: 'HASH_FUNCTION_KECCAK256' },
      signWith,
    )
  }

  /** EIP-712: the kms computes the hash from the typed data. */
  function signTypedData(typedData: TypedDataDefinition, signWith: string | undefined): Promise<Hex> {
    // serializeTypedData keeps only the domain fields its EIP712Domain type names: name them all.
    const types = { EIP712Domain: getTypesForEIP712Domain({ domain: typedData.domain }), ...typedData.types }
    const serialized = serializeTypedData({ ...typedData, types } as never)
    return signRaw(
      { method: 'eth_signTypedData_v4', params: [signWith, serialized] },
      { payload: serialized, encoding: 'PAYLOAD_ENCODING_EIP712', hashFunction: 'HASH_FUNCTION_NOT_APPLICABLE' },
      signWith,
    )
  }

  /** EIP-7702: the kms hashes the authorization itself (and its policy sees the contract). */
  function signAuthorizationTuple(authorization: { address: Address; chainId: number; nonce: number }, signWith: string): Promise<Hex> {
    return signRaw(
      { method: 'eip7702_authorization', params: [authorization] },
      { payload: JSON.stringify(authorization), encoding: 'PAYLOAD_ENCODING_EIP7702_AUTHORIZATION', hashFunction: 'HASH_FUNCTION_NOT_APPLICABLE' },
      signWith,
    )
  }

  /** sign_transaction V2 of `transaction`, approved as `consent` (default: the transaction as eth_sendTransaction). */
  async function signTransaction(transaction: TransactionSerializable, signWith: string | undefined, consent?: ConsentWalletRequest): Promise<Hex> {
    if (!signWith) throw new MissingSignWithError()
    const { organizationId } = signedIn()
    const { serializeTransaction } = await import('./transactions.js')
    const grant = await grantCovering(transaction, signWith as Address)
    if (grant) return signInGrant(grant.grantId, serializeTransaction(transaction).slice(2), signWith)
    const request = consent ?? { method: 'eth_sendTransaction', params: [rpcJson({ from: signWith, ...transaction })] }
    const result = await submit<{ signedTransaction?: string }>('signTransactionResult', request, (kms) =>
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

  /** POSTs a body the frame stamped (or wrote) to the kms; answers its activity's result. */
  async function submitStamped(path: string, body: string, stamp: { stampHeaderName: string; stampHeaderValue: string }) {
    const { kmsUrl } = await settings()
    if (!kmsUrl) throw new MissingBaseUrlError()
    return completed((await postStamped({ baseUrl: kmsUrl }, path, body, stamp)) as { activity: Activity })
  }

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

  /** The user's grants in force (list_grants, a Latchkey query), stamped as any query, with no prompt. */
  async function listGrants(): Promise<KmsGrant[]> {
    const { organizationId, userId } = signedIn()
    const body = JSON.stringify({ organizationId, userId })
    const { kmsUrl } = await settings()
    if (!kmsUrl) throw new MissingBaseUrlError()
    const answer = await withSession(async () =>
      kmsCall(async () => postStamped({ baseUrl: kmsUrl }, 'query/list_grants', body, await signer.query.stamp(body))),
    )
    return (answer as { grants: KmsGrant[] }).grants
  }

  /** The grant in force whose scope covers `transaction` (grants.ts), when the signer keeps grant keys. */
  async function grantCovering(transaction: TransactionSerializable, account: Address): Promise<KmsGrant | undefined> {
    if (!signer.grants) return undefined
    const [{ coveringGrant }, grants] = await Promise.all([import('./grants.js'), listGrants()])
    return coveringGrant(grants, transaction, account, now())
  }

  /**
   * sign_transaction stamped with the grant's key in the consent frame, with no prompt: the kms
   * applies the grant's rule. A refusal is GrantRefusedError, never a prompt instead.
   */
  async function signInGrant(grantId: string, unsignedTransaction: string, signWith: string): Promise<Hex> {
    const { organizationId } = signedIn()
    const body = JSON.stringify({
      type: 'ACTIVITY_TYPE_SIGN_TRANSACTION_V2',
      timestampMs: String(now()),
      organizationId,
      parameters: { signWith, unsignedTransaction, type: 'TRANSACTION_TYPE_ETHEREUM' },
    })
    const { asGrantRefusal } = await import('./grants.js')
    let result: Record<string, unknown>
    try {
      result = await submitStamped('submit/sign_transaction', body, await signer.grants!.stamper(grantId).stamp(body))
    } catch (error) {
      throw asGrantRefusal(error, grantId)
    }
    const signed = (result['signTransactionResult'] as { signedTransaction?: string } | undefined)?.signedTransaction
    if (!signed) throw new SignRawPayloadResultNotFoundError({ details: 'sign_transaction returned no signed transaction' })
    return (signed.startsWith('0x') ? signed : `0x${signed}`) as Hex
  }

  /**
   * Fills nonce, gas and fees from the chain, signs through the kms and broadcasts; answers the
   * hash. `consent` is the request the user approves (default: this transaction as eth_sendTransaction).
   */
  async function sendTransaction(request: TransactionRequest, consent?: ConsentWalletRequest): Promise<Hex> {
    const { credential, chainId } = signedIn()
    const chain = chainOf(chainId)
    const { createClient, http, prepareTransactionRequest } = await import('./transactions.js')
    // A bare client with the one action it needs: not every public action in the lazy chunk.
    const publicClient = createClient({ chain, transport: http(chain.rpcUrls.default.http[0]) })
    const prepared = await prepareTransactionRequest(publicClient, { ...request, account: credential.address, chain } as Parameters<
      typeof prepareTransactionRequest
    >[1])
    const { account: _account, from: _from, parameters: _parameters, chainId: _chainId, ...fields } = prepared as Record<string, unknown>
    const transaction = { ...(fields as TransactionSerializable), chainId: chain.id }
    const signed = await signTransaction(transaction, credential.address, consent)
    return publicClient.request({ method: 'eth_sendRawTransaction', params: [signed] })
  }

  /**
   * The smart-account module (loaded once) and what it needs of this wallet, for `chainId` (default
   * the current chain). `consent`: what the user approves for the transactions it sends (e.g. the
   * wallet_sendCalls request); default each transaction itself.
   */
  async function smartAccount(chainId?: number, consent?: ConsentWalletRequest) {
    const { credential, chainId: current } = signedIn()
    const module = await import('./smartAccount.js')
    const context: SmartAccountContext = {
      account: credential.address,
      chain: chainOf(chainId ?? current),
      executor: batchExecutor ?? undefined,
      signAuthorization: (authorization) => signAuthorizationTuple(authorization, credential.address),
      send: ({ authorizationList, ...request }) => sendTransaction(authorizationList ? { ...request, authorizationList, type: 'eip7702' } : request, consent),
    }
    return { module, context }
  }

  /** A batch's status as the chain (or, for a UserOperation, its bundler) reports it now. */
  async function callsStatusNow(id: string) {
    const { module } = await smartAccount()
    const batch = module.decodeBatchId(id)
    const chain = batch && options.chains.find((candidate) => candidate.id === batch.chainId)
    if (!batch || !chain) return undefined
    if (!batch.userOperation) return module.callsStatus(chain, id, batch)
    const bundler = module.bundlerUrl(chain, options.sponsorship?.bundlerUrls)
    const { module: operations, context: sponsored } = await userOperations()
    return bundler ? operations.userOperationStatus(sponsored, bundler, chain, id, batch.hashes[0]!) : undefined
  }
  const callsWatch = callsWatcher({ read: callsStatusNow })
  /** Answers a batch's id once the wallet watches it. */
  const watched = (id: Hex) => {
    callsWatch.start(id)
    return { id }
  }

  /**
   * The UserOperation module (loaded on the first sponsored call) and what it needs of this wallet:
   * the smart-account context, typed data signed through the consent path, and the chain's bundler.
   */
  async function userOperations(chainId?: number) {
    const { credential } = signedIn()
    const [{ module: smart, context }, module] = await Promise.all([smartAccount(chainId), import('./userOperations.js')])
    const operations: UserOperationContext = {
      ...context,
      signTypedData: (typedData) => signTypedData(typedData as TypedDataDefinition, credential.address),
      fetch: (input, init) => (options.fetch ?? globalThis.fetch)(input, init),
    }
    return { module, context: operations, bundlerUrl: smart.bundlerUrl(context.chain, options.sponsorship?.bundlerUrls) }
  }

  /** Keeps what the chain says the account delegates to, so the credential shows the smart account. */
  function noteDelegation(address: Address, chainId: number, delegate: Address | undefined) {
    if (!record || record.credential.address !== address) return
    const key = String(chainId)
    if (record.delegations?.[key] === delegate) return
    const { [key]: _old, ...others } = record.delegations ?? {}
    write(withSmartAccount({ ...record, delegations: delegate ? { ...others, [key]: delegate } : others }))
  }

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
    /** Fills nonce, gas and fees from the chain, signs through the kms and broadcasts. */
    /**
     * ERC-7715 `wallet_grantPermissions` (one request): checked (an expiry, only permissions the
     * kms enforces; GrantRequestError otherwise), approved by the user in the consent frame, which
     * makes the grant's key; created in the kms as a grant bound to that key. Answers the request
     * with `context`, the grant id.
     */
    async grantPermissions(params: readonly unknown[]): Promise<Record<string, unknown>> {
      const { toGrantAnswer, toGrantParameters } = await import('./permissions.js')
      const { credential, userId, organizationId, chainId } = signedIn()
      if (params.length !== 1) throw new MalformedGrantError('wallet_grantPermissions grants one permission request at a time')
      const request = params[0] as Record<string, unknown>
      const parameters = toGrantParameters(request, { account: credential.address, userId, now: now() })
      if (!signer.grants) throw new ClientsNotFoundError({ details: 'Grants need the consent frame, which makes and keeps their keys' })
      const body = JSON.stringify({ type: 'ACTIVITY_TYPE_LATCHKEY_CREATE_GRANT', timestampMs: String(now()), organizationId, parameters })
      const grants = signer.grants
      const result = await withSession(async () => {
        const { stamp, payload } = await grants.approve(
          { method: 'wallet_grantPermissions', params: [request] },
          { account: credential.address, chainId },
          body,
        )
        const created = await kmsCall(() => submitStamped('submit/create_grant', payload, stamp))
        const { grantId } = created['createGrantResult'] as { grantId: string }
        await grants.bind(grantId, (JSON.parse(payload) as { parameters: { apiKey: { publicKey: string } } }).parameters.apiKey.publicKey)
        return { grantId }
      })
      return toGrantAnswer(request, result, credential.address)
    },

    /** ERC-7715 `wallet_getPermissions`: the user's grants in force for this account (list_grants). */
    async getPermissions(): Promise<PermissionResponse[]> {
      const { toPermissionResponses } = await import('./permissions.js')
      const { credential } = signedIn()
      return toPermissionResponses((await listGrants()).filter((grant) => grant.account.toLowerCase() === credential.address.toLowerCase()))
    },

    /**
     * ERC-7715 `wallet_revokePermissions` (`{ permissionContext }`: the grant id): revoke_grant in
     * the kms, stamped by the consent frame without a prompt (revoking only takes power away),
     * which forgets the grant's key.
     */
    async revokePermissions(params: readonly unknown[]): Promise<null> {
      const { organizationId } = signedIn()
      const [first] = params as [{ permissionContext?: unknown; context?: unknown } | undefined]
      const grantId = first?.permissionContext ?? first?.context
      if (typeof grantId !== 'string' || grantId === '')
        throw new MalformedGrantError('wallet_revokePermissions needs { permissionContext }, the grant to revoke')
      if (!signer.grants) throw new ClientsNotFoundError({ details: 'Grants need the consent frame, which makes and keeps their keys' })
      const revoker = signer.grants.revoker(grantId)
      const body = JSON.stringify({ type: 'ACTIVITY_TYPE_LATCHKEY_REVOKE_GRANT', timestampMs: String(now()), organizationId, parameters: { grantId } })
      await withSession(async () => kmsCall(async () => submitStamped('submit/revoke_grant', body, await revoker.stamp(body))))
      return null
    },

    /** Sent as a UserOperation with sponsorship on (answers the hash of the transaction that carried it, once included). */
    async sendTransaction(request: TransactionRequest): Promise<Hex> {
      if (!options.sponsorship) return sendTransaction(request)
      const { module, context, bundlerUrl } = await userOperations()
      const sent = await module.sendSponsored(context, () => [module.callOf(request)], { ...options.sponsorship, bundlerUrl })
      return sent ? module.transactionOf(context, sent.bundlerUrl, sent.hash) : sendTransaction(request)
    },

    /**
     * EIP-5792 capabilities of the signed-in account by chain (hex chain id → `{ atomic: { status } }`):
     * 'supported' once the account delegates to the batch executor on that chain (read from its
     * code, `0xef0100 ‖ executor`), 'ready' while it can be upgraded (no code, executor deployed),
     * else 'unsupported'. Default: every configured chain.
     */
    async getCapabilities(
      chainIds?: readonly number[],
    ): Promise<Record<Hex, { atomic: { status: AtomicStatus }; paymasterService?: { supported: true } | undefined }>> {
      const { credential } = signedIn()
      const wanted = options.chains.filter((chain) => !chainIds || chainIds.includes(chain.id))
      const entries = await Promise.all(
        wanted.map(async (chain) => {
          const { module, context } = await smartAccount(chain.id)
          const status = await module.atomicStatus(context)
          noteDelegation(credential.address, chain.id, status === 'supported' ? context.executor : undefined)
          // ERC-7677: sponsored batches on chains with a bundler (the sponsorship's or the chain's own).
          const sponsored = status !== 'unsupported' && module.bundlerUrl(chain, options.sponsorship?.bundlerUrls) !== undefined
          return [`0x${chain.id.toString(16)}`, { atomic: { status }, ...(sponsored ? { paymasterService: { supported: true as const } } : {}) }] as const
        }),
      )
      return Object.fromEntries(entries)
    },

    /**
     * Signs an EIP-7702 authorization that delegates the account to the batch executor on the
     * current chain, through the kms (sign_raw_payload over its hash). The account sends it
     * itself, so its nonce is the account's next transaction nonce + 1. Another chain, another
     * nonce or another contract is an {@link InvalidAuthorizationError}, and nothing is signed or sent.
     */
    async signAuthorization(
      requested: { address?: Address | undefined; chainId?: number | undefined; nonce?: number | undefined } = {},
    ): Promise<SignedAuthorization> {
      const { module, context } = await smartAccount()
      return (await module.signAuthorization(context, requested)).authorization
    },

    /**
     * Upgrades the account to a smart account on the current chain: one type-4 transaction from
     * the account to itself carrying the signed authorization. Waits for it and reads the
     * delegation back from the chain. Answers the transaction hash and the credential's new
     * smart-account fields.
     */
    async upgradeAccount(
      requested: { chainId?: number | undefined; nonce?: number | undefined } = {},
    ): Promise<{ hash: Hex; smartWalletRefAddress: Address; smartWalletRefId: string }> {
      const { module, context } = await smartAccount()
      const { hash, upgraded } = await module.upgrade(context, requested)
      if (!upgraded) throw new CannotProceedError({ details: `The upgrade transaction ${hash} did not delegate the account to ${context.executor}.` })
      noteDelegation(context.account, context.chain.id, context.executor)
      return { hash, smartWalletRefAddress: context.account, smartWalletRefId: `eip155:${context.chain.id}:${context.executor}` }
    },

    /**
     * EIP-5792 `wallet_sendCalls` on the current chain: one atomic transaction through the batch
     * executor. An account not yet upgraded is upgraded by that same transaction (it carries the
     * authorization), so the first batch is one transaction too. Without an executor on the chain
     * the calls go one by one, or, with `atomicRequired`, fail with 5760 and nothing is sent.
     * Answers the batch id for {@link getCallsStatus}. With sponsorship on, or ERC-7677's
     * `paymasterService` (an optional one falls back to user-paid gas), one sponsored UserOperation.
     */
    async sendCalls(parameters: {
      calls: readonly BatchCall[]
      chainId?: number | undefined
      atomicRequired?: boolean | undefined
      paymasterService?: PaymasterService | undefined
    }): Promise<{ id: Hex }> {
      if (parameters.chainId !== undefined && parameters.chainId !== wallet.chainId)
        throw new EmbeddedError('chain_mismatch', `The calls are for chain ${parameters.chainId}; the wallet is on chain ${wallet.chainId}.`)
      const { paymasterService: service, ...request } = parameters
      const paymaster = service
        ? { paymasterUrl: service.url, context: service.context, fallback: service.optional ? ('user-pays' as const) : options.sponsorship?.fallback }
        : options.sponsorship
      if (paymaster) {
        const { module, context, bundlerUrl } = await userOperations()
        const sent = await module.sendSponsored(context, () => parameters.calls, { ...paymaster, bundlerUrl })
        if (sent) return watched(module.userOperationId(context.chain.id, sent.hash))
      }
      const consent: ConsentWalletRequest = {
        method: 'wallet_sendCalls',
        params: [rpcJson({ ...request, chainId: toHex(wallet.chainId), from: signedIn().credential.address })],
      }
      const { module, context } = await smartAccount(undefined, consent)
      const batch = await module.sendBatch(context, parameters.calls, parameters.atomicRequired ?? false)
      return watched(module.encodeBatchId(context.chain.id, batch))
    },

    /**
     * EIP-5792 `wallet_getCallsStatus` of a batch this wallet sent: status code, `atomic`, and the
     * receipts once mined. `undefined` for an id this wallet did not issue. A batch sent from this
     * page is answered from the wallet's own watch of it (callsWatch.ts), without a request.
     */
    async getCallsStatus(id: string) {
      const { module, context } = await smartAccount()
      const batch = module.decodeBatchId(id)
      const chain = batch && options.chains.find((candidate) => candidate.id === batch.chainId)
      if (!batch || !chain) return undefined
      const status = await callsWatch.read(id)
      // A mined batch may have upgraded the account: the credential follows the chain.
      if (!batch.userOperation && status?.status === 200 && batch.atomic && chain.id === context.chain.id && context.executor) {
        const current = await module.atomicStatus(context)
        noteDelegation(context.account, chain.id, current === 'supported' ? context.executor : undefined)
      }
      return status
    },

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
      return wallet.selectAccount(address)
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
      const publicKey = await wallet.newSessionKey()
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
      return wallet.signInWithSession(session, 'recovery', publicKey, recoverySessionSeconds, {
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
      const details = Array.isArray(error.details) ? (error.details as { reason?: unknown; domain?: unknown; metadata?: { activityType?: unknown } }[]) : []
      const mfa = details.find(
        (detail) => detail?.domain === 'latchkey.mfa' && (detail.reason === 'MFA_REQUIRED' || detail.reason === 'MFA_ENROLLMENT_REQUIRED'),
      )
      if (mfa)
        throw new MfaRequiredError({
          kmsCode: Number(error.code),
          message,
          reason: mfa.reason as 'MFA_REQUIRED' | 'MFA_ENROLLMENT_REQUIRED',
          activityType: typeof mfa.metadata?.activityType === 'string' ? mfa.metadata.activityType : undefined,
          cause: error,
        })
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
