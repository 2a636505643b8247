'use client'
import { type Connector, getInAppBrowserLink, getWalletBook, getWalletConnectDeepLink } from '@latchkey/core'
import { useEffect, useMemo, useState, useSyncExternalStore } from 'react'
import { renderSVG } from 'uqr'
import { useClient } from '../hooks/useClient.js'
import { useMessages } from '../i18n/useMessages.js'
import { isTouchDevice } from './phone.js'
import { useWalletIcons, WalletIcon } from './WalletIcon.js'

type Props = { connector: Connector; onCancel(): void }

/**
 * The WalletConnect pairing view: the QR code of the current URI, "Copy link", the time left
 * before the URI is replaced, and on phones one link per wallet that opens it with the URI (the
 * href is ready before the tap, so navigation stays inside the user's gesture).
 */
export default function WalletConnectView({ connector, onCancel }: Props) {
  const t = useMessages()
  const client = useClient()
  const uri = useSyncExternalStore(
    client.subscribe,
    () => client.getState().pairingUri,
    () => undefined,
  )
  const [copied, setCopied] = useState(false)
  const [rejected, setRejected] = useState<string>()
  const now = useNow()
  const onPhone = useMemo(isTouchDevice, [])
  // On a phone the wallets come first and the QR code is one tap away; on a computer the QR code is the way.
  const [showQr, setShowQr] = useState(!onPhone)

  useEffect(
    () =>
      connector.emitter.on('message', ({ type, data }) => {
        if (type === 'connection_rejected')
          setRejected(t.locale === 'en' ? ((data as { shortMessage?: string })?.shortMessage ?? t('e_connection_rejected')) : t('e_connection_rejected'))
      }),
    [connector, t],
  )
  // A new URI: the rejection was answered with a fresh attempt, and nothing is copied yet.
  // biome-ignore lint/correctness/useExhaustiveDependencies: a new URI is the trigger that resets the copied state
  useEffect(() => setCopied(false), [uri])

  const qr = useMemo(() => (uri ? renderSVG(uri, { ecc: 'M', border: 2 }) : undefined), [uri])
  const expiry = uri ? Number(new URLSearchParams(uri.split('?')[1]).get('expiryTimestamp')) : undefined
  const left = expiry ? Math.max(0, expiry - Math.floor(now / 1000)) : undefined
  const wallets = useMemo(() => getWalletBook().wallets.filter((wallet) => wallet.walletConnect), [])
  const icons = useWalletIcons()

  async function copy() {
    if (!uri) return
    await navigator.clipboard.writeText(uri)
    setCopied(true)
  }

  const deepLinks = uri && (
    <ul className="lk-wallets lk-grid" aria-label={t('chooseWallet')}>
      {wallets.map((wallet) => {
        // Universal links first (getWalletConnectDeepLink): a wallet that is not installed opens its store page or website.
        const href = getWalletConnectDeepLink(wallet, uri)
        return href ? (
          <li key={wallet.id}>
            <a className="lk-wallet lk-small" href={href} rel="noopener noreferrer" aria-label={t('openWallet', { name: wallet.name })}>
              <WalletIcon id={wallet.id} name={wallet.name} color={wallet.brandColor} icons={icons} size={24} />
              <span className="lk-wallet-name">{wallet.shortName}</span>
            </a>
          </li>
        ) : null
      })}
    </ul>
  )

  return (
    <div className="lk-pending lk-wc">
      <p className="lk-pending-name">{t(onPhone ? 'chooseWallet' : 'scan')}</p>
      {rejected && uri && (
        <p role="alert" className="lk-alert">
          {rejected}
        </p>
      )}
      {!showQr && (
        <button type="button" className="lk-text-button" onClick={() => setShowQr(true)}>
          {t('showQr')}
        </button>
      )}
      {onPhone &&
        (deepLinks || (
          <p className="lk-muted" role="status">
            {t('preparingQr')}
          </p>
        ))}
      {showQr ? (
        qr ? (
          // biome-ignore lint/security/noDangerouslySetInnerHtml: uqr renders the SVG from the pairing URI alone; no user-controlled markup
          <div className="lk-qr" role="img" aria-label={t('qrLabel')} dangerouslySetInnerHTML={{ __html: qr }} />
        ) : (
          // The QR code's place, in its shape, while the pairing URI is made.
          <div className="lk-qr lk-skeleton lk-qr-skeleton" role="status">
            <span className="lk-sr-only">{t('preparingQr')}</span>
          </div>
        )
      ) : null}
      {left !== undefined && (
        <p className="lk-muted lk-small-text">
          {left > 0 ? t('renewsIn', { time: `${Math.floor(left / 60)}:${String(left % 60).padStart(2, '0')}` }) : t('renewing')}
        </p>
      )}
      <div className="lk-row">
        <button type="button" className="lk-secondary" onClick={() => void copy()} disabled={!uri}>
          {t(copied ? 'copied' : 'copyLink')}
        </button>
        <button type="button" className="lk-secondary" onClick={onCancel}>
          {t('cancel')}
        </button>
      </div>
      {uri && (
        <details className="lk-more" open={onPhone}>
          <summary>{t(onPhone ? 'openInBrowser' : 'openOnDevice')}</summary>
          {!onPhone && deepLinks}
          <InAppBrowserLinks />
        </details>
      )}
    </div>
  )
}

/** "Open this page in the wallet's own browser": for wallets with an in-app browser. */
function InAppBrowserLinks() {
  const t = useMessages()
  const links = useMemo(
    () =>
      typeof location === 'undefined'
        ? []
        : getWalletBook().wallets.flatMap((wallet) => {
            const href = getInAppBrowserLink(wallet, location.href)
            return href ? [{ wallet, href }] : []
          }),
    [],
  )
  if (!links.length) return null
  return (
    <>
      <p className="lk-subheading">{t('openInBrowser')}</p>
      <ul className="lk-links">
        {links.map(({ wallet, href }) => (
          <li key={wallet.id}>
            <a href={href} rel="noopener noreferrer" aria-label={t('openInWalletBrowser', { name: wallet.name })}>
              {wallet.shortName}
            </a>
          </li>
        ))}
      </ul>
    </>
  )
}

function useNow() {
  const [now, setNow] = useState(Date.now)
  useEffect(() => {
    const timer = setInterval(() => setNow(Date.now()), 1000)
    return () => clearInterval(timer)
  }, [])
  return now
}
