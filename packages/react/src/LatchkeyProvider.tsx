'use client'
import { type Client, reconnect } from '@latchkey/core'
import { type ReactNode, useCallback, useEffect, useMemo, useState } from 'react'
import { LatchkeyContext, type ModalName } from './context.js'
import { ModalHost } from './ModalHost.js'

export type LatchkeyProviderProps = {
  client: Client
  /** Colour scheme of the modals. Default `auto` (follows the system). */
  theme?: 'light' | 'dark' | 'auto' | undefined
  children?: ReactNode
}

/**
 * Makes a Latchkey client available to the hooks and the UI, discovers wallets and restores the
 * last connection on mount.
 *
 * @example
 * <LatchkeyProvider client={client}><ConnectButton /></LatchkeyProvider>
 */
export function LatchkeyProvider({ client, theme = 'auto', children }: LatchkeyProviderProps) {
  const [modal, setModal] = useState<ModalName>()
  useEffect(() => {
    const unmount = client.mount()
    void reconnect(client)
    return unmount
  }, [client])
  const openModal = useCallback((name: ModalName) => setModal(name), [])
  const closeModal = useCallback(() => setModal(undefined), [])
  const value = useMemo(() => ({ client, modal, openModal, closeModal }), [client, modal, openModal, closeModal])
  return (
    <LatchkeyContext.Provider value={value}>
      {children}
      <ModalHost theme={theme} />
    </LatchkeyContext.Provider>
  )
}
