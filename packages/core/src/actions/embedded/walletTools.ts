import type { Client } from '../../createClient.js'
import type { Address } from '../../types.js'
import { type EmbeddedTarget, runFlow } from './internal.js'

export type FrameParameters = EmbeddedTarget & { container: HTMLElement }

/**
 * "Export wallet": the secret recovery phrase appears inside the export frame mounted in
 * `container` (another origin: the page never holds it). `close` removes it.
 *
 * @example
 * const exported = await exportWallet(client, { container })
 */
export function exportWallet(client: Client, parameters: FrameParameters): Promise<{ close(): void }> {
  return runFlow(client, 'exportWallet', parameters, (flows) => flows.exportWallet(parameters.container))
}

/** An import in progress: the user types the phrase into the frame, then `finishImport`. */
export type WalletImport = { complete(walletName: string): Promise<Address>; close(): void }

/**
 * "Import wallet", first step: mounts the import frame, where the user types a phrase.
 *
 * @example
 * const importing = await startImport(client, { container })
 */
export function startImport(client: Client, parameters: FrameParameters): Promise<WalletImport> {
  return runFlow(client, 'startImport', parameters, (flows) => flows.importWallet(parameters.container))
}

/**
 * "Import wallet", second step: the frame encrypts the phrase to the key service; answers the
 * imported wallet's first address.
 *
 * @example
 * const address = await finishImport(client, { importing, walletName: 'Old wallet' })
 */
export function finishImport(client: Client, parameters: EmbeddedTarget & { importing: WalletImport; walletName: string }): Promise<Address> {
  return runFlow(client, 'finishImport', parameters, () => parameters.importing.complete(parameters.walletName))
}

/**
 * Derives the wallet's next account and switches to it (the connection announces the change).
 *
 * @example
 * const address = await addAccount(client)
 */
export function addAccount(client: Client, parameters: EmbeddedTarget = {}): Promise<Address> {
  return runFlow(client, 'addAccount', parameters, async (flows) => (await flows.wallet.addAccount()).address)
}

/**
 * Switches to another account of the signed-in wallet.
 *
 * @example
 * await selectAccount(client, { address })
 */
export function selectAccount(client: Client, parameters: EmbeddedTarget & { address: Address }): Promise<Address> {
  return runFlow(client, 'selectAccount', parameters, async (flows) => (await flows.wallet.selectAccount(parameters.address)).address)
}

/**
 * The accounts of the signed-in embedded wallet, in derivation order.
 *
 * @example
 * const accounts = await getEmbeddedAccounts(client)
 */
export function getEmbeddedAccounts(client: Client, parameters: EmbeddedTarget = {}): Promise<readonly Address[]> {
  return runFlow(client, 'getEmbeddedAccounts', parameters, (flows) => flows.wallet.accounts())
}
