'use client'
import { BaseError, type EmbeddedConnector } from '@latchkey/core'
import { useEffect, useId, useRef, useState } from 'react'
import { useAddAccount, useAddPasskey, useExportWallet, useImportWallet } from '../hooks/useWalletTools.js'

type Props = { connector: EmbeddedConnector }
type Panel = 'export' | 'import' | undefined

/**
 * The embedded wallet's own tools in the account modal, on the same hooks an app would use:
 * "Export wallet" (the phrase appears in the export frame only), "Import wallet" (typed into the
 * import frame), "Add an account" (the next derived account, switched to), "Add a passkey".
 */
export default function EmbeddedTools(_props: Props) {
  const exporter = useExportWallet()
  const importer = useImportWallet()
  const accounts = useAddAccount()
  const passkeys = useAddPasskey()
  const [panel, setPanel] = useState<Panel>()
  const [importReady, setImportReady] = useState(false)
  const [pending, setPending] = useState<string>()
  const [status, setStatus] = useState<string>()
  const [error, setError] = useState<unknown>()
  const [walletName, setWalletName] = useState('Imported wallet')
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
        void run(next === 'export' ? 'Opening the export frame…' : 'Opening the import frame…', async () => {
          if (next === 'export') {
            exported.current = await exporter.exportWallet(host.current!)
            setStatus('Your secret recovery phrase is shown in the frame above. Only this frame can read it.')
          } else {
            await importer.start(host.current!)
            setImportReady(true)
          }
        }),
    )
  }

  return (
    <div className="lk-tools">
      <h3 className="lk-subheading">Embedded wallet</h3>
      <div className="lk-row">
        <button
          type="button"
          className="lk-secondary"
          disabled={pending !== undefined}
          aria-pressed={panel === 'export'}
          onClick={() => (panel === 'export' ? close() : show('export'))}
        >
          Export wallet
        </button>
        <button
          type="button"
          className="lk-secondary"
          disabled={pending !== undefined}
          aria-pressed={panel === 'import'}
          onClick={() => (panel === 'import' ? close() : show('import'))}
        >
          Import wallet
        </button>
        <button
          type="button"
          className="lk-secondary"
          disabled={pending !== undefined}
          onClick={() =>
            void run('Adding an account…', async () => {
              const address = await accounts.addAccount()
              setStatus(`Now using ${address}`)
            })
          }
        >
          Add an account
        </button>
        <button
          type="button"
          className="lk-secondary"
          disabled={pending !== undefined}
          onClick={() =>
            void run('Waiting for your passkey…', async () => {
              await passkeys.addPasskey()
              setStatus('Passkey added. You can now sign in with it alone.')
            })
          }
        >
          Add a passkey
        </button>
      </div>
      <div ref={host} className="lk-frame-host" hidden={panel === undefined} />
      {panel === 'import' && importReady && (
        <div className="lk-form">
          <label htmlFor={nameId}>Wallet name</label>
          <input id={nameId} value={walletName} onChange={(event) => setWalletName(event.target.value)} />
          <button
            type="button"
            className="lk-primary"
            disabled={pending !== undefined || !walletName.trim()}
            onClick={() =>
              void run('Importing…', async () => {
                const address = await importer.finish(walletName.trim())
                close()
                setStatus(`Imported ${address}`)
              })
            }
          >
            Import
          </button>
        </div>
      )}
      {panel && (
        <button type="button" className="lk-text-button" onClick={close}>
          Done
        </button>
      )}
      {pending && (
        <p className="lk-muted" role="status">
          {pending}
        </p>
      )}
      {status && !pending && (
        <p className="lk-muted" role="status" aria-label="Wallet tools status">
          {status}
        </p>
      )}
      {error !== undefined && (
        <p role="alert" className="lk-alert">
          {error instanceof BaseError ? error.shortMessage : error instanceof Error ? error.message : 'Something went wrong.'}
        </p>
      )}
    </div>
  )
}
