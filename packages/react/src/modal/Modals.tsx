'use client'
import type { ModalName } from '../context.js'
import { AccountModal } from './AccountModal.js'
import { ConnectModal } from './ConnectModal.js'
import '#modal.css'

/** The lazily loaded modal bundle: one component per modal name. */
export default function Modals({ name, theme, onClose }: { name: ModalName; theme: 'light' | 'dark' | 'auto'; onClose(): void }) {
  return name === 'connect' ? <ConnectModal theme={theme} onClose={onClose} /> : <AccountModal theme={theme} onClose={onClose} />
}
