import type { Client } from '@latchkey/core'
import { createContext } from 'react'

/** `connectAndSignIn`: the connect modal of `<ConnectButton requireSignIn />`, which signs in while it connects where the wallet can. */
export type ModalName = 'connect' | 'connectAndSignIn' | 'account'

export type LatchkeyContextValue = {
  client: Client
  modal: ModalName | undefined
  openModal(name: ModalName): void
  closeModal(): void
}

/** @internal */
export const LatchkeyContext = createContext<LatchkeyContextValue | undefined>(undefined)
