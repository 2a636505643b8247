'use client'
import type { EmbeddedConnector } from '@latchkey/core'
import { useEffect, useId, useRef, useState } from 'react'
import { useAddAccount, useAddPasskey, useExportWallet, useImportWallet } from '../hooks/useWalletTools.js'
import { useMessages } from '../i18n/useMessages.js'

type Props = { connector: EmbeddedConnector }
type Panel = 'export' | 'import' | undefined

/**
 * The embedded wallet's own tools in the account modal, on the same hooks an app would use:
 * "Export wallet" (the phrase appears in the export frame only), "Import wallet" (typed into the
 * import frame), "Add an account" (the next derived account, switched to), "Add a passkey".
 */
export default function EmbeddedTools(_props: Props) {
  const t = useMessages()
  const exporter = useExportWallet()
  const importer = useImportWallet()
  const accounts = useAddAccount()
  const passkeys = useAddPasskey()
  const [panel, setPanel] = useState<Panel>()
  const [importReady, setImportReady] = useState(false)
  const [pending, setPending] = useState<string>()
  const [status, setStatus] = useState<string>()
  const [error, setError] = useState<unknown>()
  const [walletName, setWalletName] = useState(() => t('importedName'))
  const host = useRef<HTMLDivElement>(null)
  const exported = useRef<{ close(): void }>(undefined)
  const nameId = useId()

  useEffect(() => () => exported.current?.close(), [])

  async function run(label: string, work: () => Promise<void>) {
    setPending(label)
    setError(undefined)
    setStatus(undefined)
    try {
      await work()
    } catch (caught) {
      setError(caught)
    } finally {
      setPending(undefined)
    }
  }

  function close() {
    exported.current?.close()
    exported.current = undefined
    importer.close()
    setImportReady(false)
    setPanel(undefined)
  }

  function show(next: Exclude<Panel, undefined>) {
    close()
    setPanel(next)
    // The frame mounts into the host once it is rendered.
    queueMicrotask(
      () =>
        void run(t(next === 'export' ? 'openingExport' : 'openingImport'), async () => {
          if (next === 'export') {
            exported.current = await exporter.exportWallet(host.current!)
            setStatus(t('phraseShown'))
          } else {
            await importer.start(host.current!)
            setImportReady(true)
          }
        }),
    )
  }

  return (
    <div className="lk-tools">
      <h3 className="lk-subheading">{t('embeddedWallet')}</h3>
      <div className="lk-row">
        <button
          type="button"
          className="lk-secondary"
          disabled={pending !== undefined}
          aria-pressed={panel === 'export'}
          onClick={() => (panel === 'export' ? close() : show('export'))}
        >
          {t('exportWallet')}
        </button>
        <button
          type="button"
          className="lk-secondary"
          disabled={pending !== undefined}
          aria-pressed={panel === 'import'}
          onClick={() => (panel === 'import' ? close() : show('import'))}
        >
          {t('importWallet')}
        </button>
        <button
          type="button"
          className="lk-secondary"
          disabled={pending !== undefined}
          onClick={() =>
            void run(t('addingAccount'), async () => {
              const address = await accounts.addAccount()
              setStatus(t('nowUsing', { address }))
            })
          }
        >
          {t('addAccount')}
        </button>
        <button
          type="button"
          className="lk-secondary"
          disabled={pending !== undefined}
          onClick={() =>
            void run(t('waitingPasskey'), async () => {
              await passkeys.addPasskey()
              setStatus(t('passkeyAdded'))
            })
          }
        >
          {t('addPasskey')}
        </button>
      </div>
      <div ref={host} className="lk-frame-host" hidden={panel === undefined} />
      {panel === 'import' && importReady && (
        <div className="lk-form">
          <label htmlFor={nameId}>{t('walletName')}</label>
          <input id={nameId} value={walletName} onChange={(event) => setWalletName(event.target.value)} />
          <button
            type="button"
            className="lk-primary"
            disabled={pending !== undefined || !walletName.trim()}
            onClick={() =>
              void run(t('importing'), async () => {
                const address = await importer.finish(walletName.trim())
                close()
                setStatus(t('imported', { address }))
              })
            }
          >
            {t('import')}
          </button>
        </div>
      )}
      {panel && (
        <button type="button" className="lk-text-button" onClick={close}>
          {t('done')}
        </button>
      )}
      {pending && (
        <p className="lk-muted" role="status">
          {pending}
        </p>
      )}
      {status && !pending && (
        <p className="lk-muted" role="status" aria-label={t('toolsStatus')}>
          {status}
        </p>
      )}
      {error !== undefined && (
        <p role="alert" className="lk-alert">
          {t.error(error)}
        </p>
      )}
    </div>
  )
}
