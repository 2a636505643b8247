'use client'
import type { WalletBookEntry } from '@latchkey/core'
import { useEffect, useRef } from 'react'
import { useMessages } from '../i18n/useMessages.js'
import { WalletIcon } from './WalletIcon.js'

/** The wallets the help suggests: widely used ones, for a browser and for a phone. */
const SUGGESTED = ['metamask', 'coinbase', 'rainbow', 'trust', 'rabby', 'phantomevm']

type Props = {
  wallets: readonly WalletBookEntry[]
  icons: Readonly<Record<string, string>> | undefined
  onBack(): void
}

/** "New to wallets?": what a wallet is and where to get one, with links to a few wallets' sites. */
export function HelpView({ wallets, icons, onBack }: Props) {
  const t = useMessages()
  const heading = useRef<HTMLHeadingElement>(null)
  // The list the user came from is gone: reading starts at the help's first heading.
  useEffect(() => heading.current?.focus(), [])
  return (
    <div className="lk-help">
      <h3 ref={heading} tabIndex={-1}>
        {t('whatIsWallet')}
      </h3>
      <p className="lk-muted">{t('whatIsWalletText')}</p>
      <h3>{t('getAWallet')}</h3>
      <p className="lk-muted">{t('getAWalletText')}</p>
      <ul className="lk-wallets lk-grid">
        {wallets
          .filter((wallet) => SUGGESTED.includes(wallet.id))
          .map((wallet) => (
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
      <button type="button" className="lk-secondary" onClick={onBack}>
        {t('back')}
      </button>
    </div>
  )
}
