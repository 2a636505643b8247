import type { Address, Chain, Hex, SignedAuthorization } from 'viem'
import type { SessionKeyStore } from './sessionKeys.js'
import type { Sponsorship } from './userOperations.js'

// The embedded wallet's public types (SPEC §3), apart from the wallet that uses them.

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
export type SignInKind = 'email' | 'passkey' | 'recovery' | 'oauth' | 'guest'

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
  /**
   * The language of the consent frame's dialogs (BCP 47: `ar`, `pt-BR`), or what reads it when the
   * frame opens (the app's current language). Default: the browser's; English where the frame has no catalogue.
   */
  locale?: string | (() => string | undefined) | undefined
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
