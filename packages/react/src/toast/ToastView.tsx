'use client'
import type { Client } from '@latchkey/core'
import { useEffect, useState } from 'react'
import '#modal.css'
import { useLatchkeyContext } from '../hooks/useClient.js'
import { type Translate, useMessages } from '../i18n/useMessages.js'
import { explorerLink, failureText, statusKey } from './text.js'
import { type TrackedTransaction, updateTransaction, useTrackedTransactions } from './transactions.js'

/** How many toasts show at once: the newest. */
const SHOWN = 3

/**
 * The transaction toasts, docked to the bottom inline-end corner: pending, then confirmed (with the
 * explorer link where the chain has an explorer) or failed (the error's display text and "Try
 * again"). A polite live region; each toast is dismissable from the keyboard.
 */
export default function ToastView({ theme }: { theme: 'light' | 'dark' | 'auto' }) {
  const t = useMessages()
  const { client, themeVariables, catalogueReady } = useLatchkeyContext()
  const tracked = useTrackedTransactions(client)
  // The live region is in the page before its first toast, so that screen readers announce it.
  const [live, setLive] = useState(false)
  useEffect(() => setLive(true), [])
  const shown = live && catalogueReady ? tracked.filter((entry) => !entry.dismissed).slice(-SHOWN) : []
  return (
    <section className="lk-toasts" data-lk-theme={theme} style={themeVariables} lang={t.locale} dir={t.dir} aria-label={t('transactions')}>
      <ol className="lk-toast-list" aria-live="polite">
        {shown.map((entry) => (
          <Toast key={entry.id} entry={entry} client={client} t={t} />
        ))}
      </ol>
    </section>
  )
}

function Toast({ entry, client, t }: { entry: TrackedTransaction; client: Client; t: Translate }) {
  const title = t(statusKey(entry))
  const link = explorerLink(client, entry)
  return (
    <li className="lk-toast" data-status={entry.status}>
      <span className="lk-toast-mark" aria-hidden="true">
        {entry.status === 'pending' ? <span className="lk-spinner" /> : entry.status === 'confirmed' ? '✓' : '!'}
      </span>
      <div className="lk-toast-body">
        <p className="lk-toast-title">{title}</p>
        {entry.status === 'failed' && <p className="lk-toast-text">{failureText(entry, t)}</p>}
        <div className="lk-toast-actions">
          {link && entry.status !== 'pending' && (
            <a className="lk-text-button" href={link.href} target="_blank" rel="noopener noreferrer">
              {t('viewOn', { explorer: link.name ?? t('explorer') })}
            </a>
          )}
          {entry.status === 'failed' && entry.retry && (
            <button
              type="button"
              className="lk-text-button"
              onClick={() => {
                updateTransaction(client, entry.id, { dismissed: true })
                entry.retry?.()
              }}
            >
              {t('tryAgain')}
            </button>
          )}
        </div>
      </div>
      <button
        type="button"
        className="lk-icon-button lk-toast-close"
        aria-label={t('dismiss')}
        onClick={() => updateTransaction(client, entry.id, { dismissed: true })}
      >
        ×
      </button>
    </li>
  )
}
