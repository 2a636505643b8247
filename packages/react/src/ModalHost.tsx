'use client'
import { lazy, Suspense, useContext } from 'react'
import { LatchkeyContext } from './context.js'

/** The modal code (and the wallet book) download on first open, never with the page. */
export const loadModals = () => import('./modal/Modals.js')
const Modals = lazy(loadModals)

/** @internal Renders the open modal, if any. */
export function ModalHost({ theme }: { theme: 'light' | 'dark' | 'auto' }) {
  const context = useContext(LatchkeyContext)
  if (!context?.modal) return null
  return (
    <Suspense fallback={null}>
      <Modals name={context.modal} theme={theme} onClose={context.closeModal} />
    </Suspense>
  )
}
