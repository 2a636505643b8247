'use client'
import { type ReactNode, useEffect, useId, useRef } from 'react'
// Both modals render in this dialog: their styles come with it.
import '#modal.css'
import { useLatchkeyContext } from '../hooks/useClient.js'
import { useMessages } from '../i18n/useMessages.js'
import { useSwipeToClose } from './swipe.js'

const focusable = 'a[href], button:not([disabled]), input:not([disabled]), select:not([disabled]), textarea:not([disabled]), [tabindex]:not([tabindex="-1"])'

export type DialogProps = {
  title: string
  theme: 'light' | 'dark' | 'auto'
  onClose(): void
  children: ReactNode
}

/**
 * A WAI-ARIA modal dialog: focus moves in and is trapped, Escape and the backdrop close it, focus
 * returns to what opened it, and the page behind does not scroll.
 */
export function Dialog({ title, theme, onClose, children }: DialogProps) {
  const t = useMessages()
  const { themeVariables } = useLatchkeyContext()
  const titleId = useId()
  const ref = useRef<HTMLDivElement>(null)
  const onCloseRef = useRef(onClose)
  onCloseRef.current = onClose
  const swipe = useSwipeToClose(ref, () => onCloseRef.current())

  useEffect(() => {
    const opener = document.activeElement instanceof HTMLElement ? document.activeElement : null
    const dialog = ref.current
    const first = dialog?.querySelector<HTMLElement>(focusable)
    ;(first ?? dialog)?.focus()
    const overflow = document.body.style.overflow
    document.body.style.overflow = 'hidden'
    function onKeyDown(event: KeyboardEvent) {
      if (event.key === 'Escape') {
        event.stopPropagation()
        onCloseRef.current()
        return
      }
      if (event.key !== 'Tab' || !dialog) return
      const items = [...dialog.querySelectorAll<HTMLElement>(focusable)]
      const firstItem = items[0]
      const lastItem = items.at(-1)
      if (!firstItem || !lastItem) return event.preventDefault()
      if (event.shiftKey && document.activeElement === firstItem) {
        event.preventDefault()
        lastItem.focus()
      } else if (!event.shiftKey && document.activeElement === lastItem) {
        event.preventDefault()
        firstItem.focus()
      } else if (!dialog.contains(document.activeElement)) {
        event.preventDefault()
        firstItem.focus()
      }
    }
    document.addEventListener('keydown', onKeyDown)
    return () => {
      document.removeEventListener('keydown', onKeyDown)
      document.body.style.overflow = overflow
      if (opener?.isConnected) opener.focus()
    }
  }, [])

  return (
    // biome-ignore lint/a11y/noStaticElementInteractions: a click on the backdrop closes the dialog; Escape does the same from the keyboard
    <div
      className="lk-backdrop"
      data-lk-theme={theme}
      style={themeVariables}
      lang={t.locale}
      dir={t.dir}
      onMouseDown={(event) => {
        if (event.target === event.currentTarget) onClose()
      }}
    >
      <div ref={ref} className="lk-dialog" role="dialog" aria-modal="true" aria-labelledby={titleId} tabIndex={-1}>
        {/* Below 640 px the dialog is a bottom sheet: drag its handle or header down to close it. */}
        <div className="lk-grab" {...swipe}>
          <span className="lk-handle" aria-hidden="true" />
          {/* A div, not <header>: that would be a second banner landmark beside the page's own. */}
          <div className="lk-dialog-header">
            <h2 id={titleId}>{title}</h2>
            <button type="button" className="lk-icon-button" aria-label={t('close')} onClick={onClose}>
              ×
            </button>
          </div>
        </div>
        {children}
      </div>
    </div>
  )
}
