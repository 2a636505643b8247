import { useMemo } from 'react'
import type { ModalName } from '../context.js'
import { useLatchkeyContext } from './useClient.js'

export type UseModalReturnType = { open(): void; close(): void; isOpen: boolean }

function useModal(name: ModalName): UseModalReturnType {
  const { modal, openModal, closeModal } = useLatchkeyContext()
  return useMemo(() => ({ open: () => openModal(name), close: closeModal, isOpen: modal === name }), [modal, openModal, closeModal, name])
}

/**
 * Opens and closes the connect modal.
 *
 * @example
 * const { open } = useConnectModal()
 */
export const useConnectModal = (): UseModalReturnType => useModal('connect')

/**
 * Opens and closes the account modal.
 *
 * @example
 * const { open } = useAccountModal()
 */
export const useAccountModal = (): UseModalReturnType => useModal('account')
