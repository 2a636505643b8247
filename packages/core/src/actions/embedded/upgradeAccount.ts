import type { Client } from '../../createClient.js'
import type { BaseError } from '../../errors/base.js'
import type { AccountNotFoundError, CannotProceedError, InvalidAuthorizationError } from '../../errors/embedded.js'
import type { Address, Hex } from '../../types.js'
import { type EmbeddedTarget, runFlow } from './internal.js'

export type UpgradeAccountParameters = EmbeddedTarget & {
  /** The authorization's chain; default (and the only one accepted) the wallet's current chain. */
  chainId?: number | undefined
  /** The authorization's nonce; default (and the only one accepted) the account's next transaction nonce + 1. */
  nonce?: number | undefined
}

export type UpgradeAccountReturnType = {
  /** The type-4 transaction that carried the authorization. */
  hash: Hex
  /** The smart account's address: with EIP-7702 the account itself. */
  smartWalletRefAddress: Address
  /** What the account delegates to on this chain, CAIP-10: `eip155:<chainId>:<executor>`. */
  smartWalletRefId: string
}

export type UpgradeAccountErrorType =
  | InstanceType<typeof InvalidAuthorizationError>
  | InstanceType<typeof CannotProceedError>
  | InstanceType<typeof AccountNotFoundError>
  | BaseError

/**
 * Upgrades the embedded wallet's account to a smart account on the current chain (EIP-7702): the
 * wallet signs an authorization for its batch executor through the key-management service and
 * sends it in a type-4 transaction to itself. Afterwards `getCapabilities` reports `atomic:
 * 'supported'` and `sendCalls` runs batches in one transaction. `sendCalls` also upgrades on its
 * own first use, so calling this first is optional. An authorization for another chain or nonce
 * is an `InvalidAuthorizationError`, and nothing is signed or sent.
 *
 * @example
 * const { hash, smartWalletRefId } = await upgradeAccount(client)
 */
export function upgradeAccount(client: Client, parameters: UpgradeAccountParameters = {}): Promise<UpgradeAccountReturnType> {
  const { chainId, nonce } = parameters
  return runFlow(client, 'upgradeAccount', parameters, (flows) => flows.wallet.upgradeAccount({ chainId, nonce }))
}
