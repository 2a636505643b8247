'use client'
import { lazy, Suspense, useContext } from 'react'
import { LatchkeyContext } from './context.js'

// Each modal is its own chunk, downloaded on first open, never with the page: the connect modal
// carries the wallet book, the account modal viem's RPC client for the balance, which the first
// click on Connect has no use for.
/** @internal Starts downloading the connect modal (idempotent). */
export const loadConnectModal = () => import('./modal/ConnectModal.js')
/** @internal Starts downloading the account modal (idempotent). */
export const loadAccountModal = () => import('./modal/AccountModal.js')
const ConnectModal = lazy(() => loadConnectModal().then((module) => ({ default: module.ConnectModal })))
const AccountModal = lazy(() => loadAccountModal().then((module) => ({ default: module.AccountModal })))

/** @internal Renders the open modal, if any. */
export function ModalHost({ theme }: { theme: 'light' | 'dark' | 'auto' }) {
  const context = useContext(LatchkeyContext)
  if (!context?.modal || !context.catalogueReady) return null
  // A modal closes itself, even after an await, never the one the user opened since.
  const open = context.modal
  const onClose = () => context.closeModal(open)
  return (
    <Suspense fallback={null}>
      {context.modal === 'account' ? (
        <AccountModal theme={theme} onClose={onClose} />
      ) : (
        <ConnectModal theme={theme} onClose={onClose} signIn={context.modal === 'connectAndSignIn'} />
      )}
    </Suspense>
  )
}
