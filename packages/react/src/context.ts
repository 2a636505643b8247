import type { Client } from '@latchkey/core'
import { createContext } from 'react'

export type ModalName = 'connect' | 'account'

export type LatchkeyContextValue = {
  client: Client
  modal: ModalName | undefined
  openModal(name: ModalName): void
  closeModal(): void
}

/** @internal */
export const LatchkeyContext = createContext<LatchkeyContextValue | undefined>(undefined)
