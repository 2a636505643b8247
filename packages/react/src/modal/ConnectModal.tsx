'use client'
import { type Connector, type EmbeddedConnector, getWalletBook, isEmbeddedConnector, openOAuthPopup, type WalletBookEntry } from '@latchkey/core'
import { lazy, Suspense, useEffect, useId, useMemo, useRef, useState } from 'react'
import { useAccount } from '../hooks/useAccount.js'
import { useConnect } from '../hooks/useConnect.js'
import { useConnectors } from '../hooks/useConnectors.js'
import { useRecentConnectorId } from '../hooks/useRecentConnectorId.js'
import { useMessages } from '../i18n/useMessages.js'
import { Dialog } from './Dialog.js'
import { HelpView } from './HelpView.js'
import { isTouchDevice } from './phone.js'
import { useWalletIcons, WalletIcon } from './WalletIcon.js'

// The catalogue loaders ride with the modal's chunk: the eager bundle needs no import() of its own for them.
export { loadLocale } from '../i18n/catalogues.js'

// The QR code and its encoder load only when WalletConnect is picked.
const WalletConnectView = lazy(() => import('./WalletConnectView.js'))
// Email, passkey and recovery sign-in load only when picked, with the embedded wallet's code. The
// view is shown once its code is here, not behind a Suspense fallback: React keeps a fallback it
// has shown for at least 300 ms (its reveal throttle), which was most of a passkey sign-in's time.
// The lazy component remains for the case the early load failed (it retries, with the fallback).
let LoadedEmbeddedView: typeof import('./EmbeddedView.js').default | undefined
const loadEmbeddedView = () =>
  import('./EmbeddedView.js').then((module) => {
    LoadedEmbeddedView = module.default
  })
const LazyEmbeddedView = lazy(() => import('./EmbeddedView.js'))
type EmbeddedMode = import('./EmbeddedView.js').EmbeddedMode

type Props = {
  theme: 'light' | 'dark' | 'auto'
  onClose(): void
  /** Sign in while connecting (one approval with WalletConnect), for `<ConnectButton requireSignIn />`. */
  signIn?: boolean | undefined
}

/** The wallet list, then the pending view of the wallet the user picked. */
export function ConnectModal({ theme, onClose, signIn = false }: Props) {
  const t = useMessages()
  const connectors = useConnectors()
  const recent = useRecentConnectorId()
  const { isConnected } = useAccount()
  const connect = useConnect()
  const [picked, setPicked] = useState<Connector>()
  const [embeddedMode, setEmbeddedMode] = useState<EmbeddedMode>()
  // The social sign-in popup, opened in the click (popup blockers allow nothing later).
  const [oauthPopup, setOAuthPopup] = useState<Window | null>(null)
  const [help, setHelp] = useState(false)
  const helpButton = useRef<HTMLButtonElement>(null)
  const recentLabelId = useId()
  const installedLabelId = useId()
  const icons = useWalletIcons()
  const book = getWalletBook().wallets
  const embedded = connectors.find(isEmbeddedConnector) as EmbeddedConnector | undefined
  // Whether the app backend offers guests (its /auth/config), read by the connector without the wallet's code.
  const [guests, setGuests] = useState(false)
  useEffect(() => {
    if (!embedded) return
    let live = true
    embedded.offersGuests().then((offered) => live && setGuests(offered))
    return () => {
      live = false
    }
  }, [embedded])

  // Connected (here or by a wallet that restored itself): nothing left to do in this modal.
  useEffect(() => {
    if (isConnected && connect.status === 'success') onClose()
  }, [isConnected, connect.status, onClose])

  // On a phone an injected wallet means its in-app browser: that wallet comes first, before the last used.
  const inAppBrowser = useMemo(() => isTouchDevice() && connectors.some((c) => c.type === 'injected'), [connectors])
  const ordered = useMemo(() => orderWallets(connectors, recent, inAppBrowser), [connectors, recent, inAppBrowser])
  const more = useMemo(() => notInstalled(book, connectors), [book, connectors])

  /** Shows an embedded sign-in once its view's code is here; the wallet's code loads meanwhile. */
  function pickEmbedded(mode: EmbeddedMode) {
    // A failed early load is retried by the flow itself, which reports the error.
    embedded?.getFlows().catch(() => {})
    const show = () => setEmbeddedMode(mode)
    loadEmbeddedView().then(show, show)
  }

  function start(connector: Connector) {
    setPicked(connector)
    connect.connect({ connector, ...(signIn && connector.type === 'walletConnect' ? { signIn: true } : {}) }).catch(() => {
      // The error is in connect.error and shown in the pending view; a cancel goes back to the list.
    })
  }

  function cancel() {
    connect.cancel()
    connect.reset()
    setPicked(undefined)
  }

  if (embedded && embeddedMode) {
    const EmbeddedView = LoadedEmbeddedView ?? LazyEmbeddedView
    return (
      <Dialog title={t('signInTitle')} theme={theme} onClose={cancelAndClose}>
        <Suspense fallback={<span className="lk-skeleton lk-skeleton-block" aria-hidden="true" />}>
          <EmbeddedView
            key={embeddedMode}
            connector={embedded}
            mode={embeddedMode}
            popup={oauthPopup}
            onBack={() => (connect.reset(), setEmbeddedMode(undefined))}
            onConnected={onClose}
          />
        </Suspense>
      </Dialog>
    )
  }

  if (help)
    return (
      <Dialog title={t('newToWallets')} theme={theme} onClose={onClose}>
        <HelpView wallets={book} icons={icons} onBack={closeHelp} />
      </Dialog>
    )

  if (picked)
    return (
      <Dialog title={t('connectTitle')} theme={theme} onClose={cancelAndClose}>
        <div className="lk-pending">
          <WalletIcon {...iconOf(picked, book)} icons={icons} size={56} />
          <p className="lk-pending-name">{picked.name}</p>
          {connect.status === 'error' && connect.error?.code !== 'cancelled' ? (
            <>
              <p role="alert" className="lk-alert">
                {connect.error ? t.error(connect.error) : t('connectionFailed')}
              </p>
              <div className="lk-row">
                <button type="button" className="lk-secondary" onClick={() => (connect.reset(), setPicked(undefined))}>
                  {t('back')}
                </button>
                <button type="button" className="lk-primary" onClick={() => start(picked)}>
                  {t('tryAgain')}
                </button>
              </div>
            </>
          ) : picked.type === 'walletConnect' ? (
            <Suspense fallback={<span className="lk-skeleton lk-skeleton-block" aria-hidden="true" />}>
              <WalletConnectView connector={picked} onCancel={cancel} />
            </Suspense>
          ) : (
            <>
              <p className="lk-muted" role="status">
                {t('confirmIn', { name: picked.name })}
              </p>
              <span className="lk-spinner" aria-hidden="true" />
              <button type="button" className="lk-secondary" onClick={cancel}>
                {t('cancel')}
              </button>
            </>
          )}
        </div>
      </Dialog>
    )

  function closeHelp() {
    setHelp(false)
    // Back where the user left: on the button that opened the help.
    requestAnimationFrame(() => helpButton.current?.focus())
  }

  /** The badges' texts, for the wallet button's description (its name is the wallet's alone). */
  function describedBy(connector: Connector) {
    return [connector.id === recent && recentLabelId, connector.type === 'injected' && installedLabelId].filter(Boolean).join(' ')
  }

  function cancelAndClose() {
    connect.cancel()
    onClose()
  }

  const walletList = (
    <>
      {ordered.length > 0 ? (
        <ul className="lk-wallets">
          {ordered.map((connector) => (
            <li key={connector.id} className="lk-wallet-row">
              <button
                type="button"
                className="lk-wallet"
                aria-label={connector.name}
                aria-describedby={describedBy(connector) || undefined}
                onClick={() => start(connector)}
              >
                <WalletIcon {...iconOf(connector, book)} icons={icons} size={32} />
                <span className="lk-wallet-name">{connector.name}</span>
              </button>
              {/* Beside the button, not in it: its name stays the wallet's name alone; the button's description reads the badges. */}
              {describedBy(connector) && (
                <span className="lk-badges" aria-hidden="true">
                  {connector.id === recent && <span className="lk-badge">{t('recent')}</span>}
                  {connector.type === 'injected' && <span className="lk-badge lk-badge-quiet">{t('installed')}</span>}
                </span>
              )}
            </li>
          ))}
        </ul>
      ) : (
        <p className="lk-muted">{t('noWallet')}</p>
      )}
    </>
  )

  return (
    <Dialog title={t('connectTitle')} theme={theme} onClose={onClose}>
      <span id={recentLabelId} hidden>
        {t('lastUsed')}
      </span>
      <span id={installedLabelId} hidden>
        {t('installed')}
      </span>
      {inAppBrowser && walletList}
      {embedded && (
        <div className="lk-embedded-start">
          <button type="button" className="lk-primary lk-wide" onClick={() => pickEmbedded('email')}>
            {t('continueEmail')}
          </button>
          <div className="lk-row">
            <button type="button" className="lk-secondary" onClick={() => pickEmbedded('passkey')}>
              {t('continuePasskey')}
            </button>
            <button type="button" className="lk-secondary" onClick={() => pickEmbedded('create-passkey')}>
              {t('createPasskey')}
            </button>
          </div>
          {embedded.oauthProviders.length > 0 && (
            <div className="lk-row">
              {embedded.oauthProviders.map((provider) => (
                <button
                  key={provider}
                  type="button"
                  className="lk-secondary"
                  onClick={() => {
                    setOAuthPopup(openOAuthPopup())
                    pickEmbedded(provider)
                  }}
                >
                  {t(provider === 'google' ? 'continueGoogle' : 'continueApple')}
                </button>
              ))}
            </div>
          )}
          {guests && (
            <div className="lk-row">
              <button type="button" className="lk-secondary" onClick={() => pickEmbedded('guest')}>
                {t('continueGuest')}
              </button>
            </div>
          )}
          <button type="button" className="lk-text-button" onClick={() => pickEmbedded('recover')}>
            {t('recoverAccount')}
          </button>
          <p className="lk-divider">
            <span>{t('orWallet')}</span>
          </p>
        </div>
      )}
      {!inAppBrowser && walletList}
      {more.length > 0 && (
        <details className="lk-more" open={ordered.length === 0}>
          <summary>{t('moreWallets')}</summary>
          <ul className="lk-wallets lk-grid">
            {more.map((wallet) => (
              <li key={wallet.id}>
                <a
                  className="lk-wallet lk-small"
                  href={wallet.homepage}
                  target="_blank"
                  rel="noopener noreferrer"
                  aria-label={t('getWallet', { name: wallet.name })}
                >
                  <WalletIcon id={wallet.id} name={wallet.name} color={wallet.brandColor} icons={icons} size={24} />
                  <span className="lk-wallet-name">{wallet.shortName}</span>
                </a>
              </li>
            ))}
          </ul>
        </details>
      )}
      <button ref={helpButton} type="button" className="lk-text-button lk-help-button" onClick={() => setHelp(true)}>
        {t('newToWallets')}
      </button>
    </Dialog>
  )
}

/**
 * The wallet list's order: in a wallet's in-app browser its injected connector first, then the
 * last used, then the rest as discovered.
 */
export function orderWallets(connectors: readonly Connector[], recent: string | null | undefined, inAppBrowser: boolean): Connector[] {
  const rank = (c: Connector) => (inAppBrowser && c.type === 'injected' ? 2 : 0) + (c.id === recent ? 1 : 0)
  return connectors.filter((c) => !isEmbeddedConnector(c)).sort((a, b) => rank(b) - rank(a))
}

/**
 * What a connector's icon is made of: the icon the wallet announced, else its wallet-book entry's
 * (matched by rdns or id) bundled icon, else a monogram in the book's brand colour.
 */
export function iconOf(connector: Connector, wallets: readonly WalletBookEntry[]) {
  const entry = wallets.find((wallet) => wallet.id === connector.id || (connector.rdns !== undefined && wallet.eip6963Config?.rdns === connector.rdns))
  return { src: connector.icon, id: entry?.id, name: connector.name, color: entry?.brandColor }
}

/** Book wallets that are not among the connectors, matched by rdns or id. */
export function notInstalled(wallets: readonly WalletBookEntry[], connectors: readonly Connector[]): WalletBookEntry[] {
  const ids = new Set(connectors.map((c) => c.id))
  const rdns = new Set(connectors.flatMap((c) => (c.rdns ? [c.rdns] : [])))
  return wallets.filter((w) => !ids.has(w.id) && !(w.eip6963Config && rdns.has(w.eip6963Config.rdns)))
}
