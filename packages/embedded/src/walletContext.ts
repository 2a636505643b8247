import type { Address, Chain } from 'viem'
import type { Backend, BackendConfig } from './backend.js'
import type { ConsentWalletRequest } from './consentFrame.js'
import type { Activity } from './kmsCalls.js'
import type { TurnkeyClient } from './kmsClient.js'
import type { Stamper } from './sessionKeys.js'
import type { WalletSigner } from './signers.js'
import type { EmbeddedWalletCredential, EmbeddedWalletOptions, StoredWallet } from './walletTypes.js'

/**
 * What the embedded wallet's concerns (walletSigning, walletCalls, walletPermissions, walletKeys,
 * walletRecovery) use of the wallet that holds them: its options, its record and the kms paths
 * every activity takes (`withSession`, `submit`).
 */
export type WalletContext = {
  readonly options: EmbeddedWalletOptions
  readonly now: () => number
  readonly signer: WalletSigner
  readonly backend: Backend
  /** The EIP-7702 batch executor, or `null` when smart accounts are off. */
  readonly batchExecutor: Address | null
  readonly recoverySessionSeconds: number
  settings(): Promise<BackendConfig>
  /** The kms client, stamped by `stamper` (default: the session key's silent query stamper). */
  client(stamper?: Stamper): Promise<TurnkeyClient>
  /** The signed-in wallet's record; AccountNotFoundError when signed out. */
  signedIn(): StoredWallet
  current(): StoredWallet | undefined
  write(next: StoredWallet | undefined): void
  chainOf(chainId: number): Chain
  chainId(): number
  withSmartAccount(next: StoredWallet): StoredWallet
  credentialOf(
    organizationId: string,
    address: string | undefined,
    kms: TurnkeyClient,
    session: { userId: string; publicKey: string },
  ): Promise<EmbeddedWalletCredential>
  withSession<result>(action: (kms: TurnkeyClient) => Promise<result>): Promise<result>
  submit<result>(key: string, consent: ConsentWalletRequest, call: (kms: TurnkeyClient) => Promise<{ activity: Activity }>): Promise<result | undefined>
  submitStamped(path: string, body: string, stamp: { stampHeaderName: string; stampHeaderValue: string }): Promise<Record<string, unknown>>
}
