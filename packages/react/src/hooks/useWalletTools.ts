import { type Address, addAccount, addPasskey, exportWallet, finishImport, selectAccount, startImport, type WalletImport } from '@latchkey/core'
import { useEffect, useRef } from 'react'
import { type ActionState, useAction } from './useAction.js'
import { useClient } from './useClient.js'

/**
 * "Export wallet": shows the phrase inside the export frame mounted in `container`; `close` removes it.
 *
 * @example
 * const { exportWallet } = useExportWallet(); const shown = await exportWallet(container)
 */
export function useExportWallet(): ActionState<{ close(): void }> & { exportWallet(container: HTMLElement): Promise<{ close(): void }> } {
  const client = useClient()
  const [run, state] = useAction((container: HTMLElement) => exportWallet(client, { container }))
  return { ...state, exportWallet: run }
}

/**
 * "Import wallet": `start` mounts the import frame in `container`, where the user types a phrase;
 * `finish` imports it and answers the new wallet's address.
 *
 * @example
 * const { start, finish } = useImportWallet(); await start(container); await finish('Old wallet')
 */
export function useImportWallet(): {
  start(container: HTMLElement): Promise<WalletImport>
  finish(walletName: string): Promise<Address>
  close(): void
  starting: ActionState<WalletImport>
  finishing: ActionState<Address>
} {
  const client = useClient()
  const current = useRef<WalletImport>(undefined)
  useEffect(() => () => current.current?.close(), [])
  const [start, starting] = useAction(async (container: HTMLElement) => {
    current.current?.close()
    current.current = await startImport(client, { container })
    return current.current
  })
  const [finish, finishing] = useAction(async (walletName: string) => {
    const address = await finishImport(client, { importing: current.current!, walletName })
    current.current = undefined
    return address
  })
  const close = () => {
    current.current?.close()
    current.current = undefined
  }
  return { start, finish, close, starting, finishing }
}

/**
 * Derives the embedded wallet's next account and switches to it.
 *
 * @example
 * const { addAccount, data } = useAddAccount()
 */
export function useAddAccount(): ActionState<Address> & { addAccount(): Promise<Address> } {
  const client = useClient()
  const [run, state] = useAction(() => addAccount(client))
  return { ...state, addAccount: run }
}

/**
 * Switches to another account of the embedded wallet.
 *
 * @example
 * const { selectAccount } = useSelectAccount(); await selectAccount(address)
 */
export function useSelectAccount(): ActionState<Address> & { selectAccount(address: Address): Promise<Address> } {
  const client = useClient()
  const [run, state] = useAction((address: Address) => selectAccount(client, { address }))
  return { ...state, selectAccount: run }
}

/**
 * Registers another passkey for the signed-in embedded-wallet user.
 *
 * @example
 * const { addPasskey } = useAddPasskey(); await addPasskey()
 */
export function useAddPasskey(): ActionState<string> & { addPasskey(name?: string): Promise<string> } {
  const client = useClient()
  const [run, state] = useAction((name?: string) => addPasskey(client, { name }))
  return { ...state, addPasskey: run }
}
