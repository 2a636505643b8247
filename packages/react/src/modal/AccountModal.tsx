'use client'
import { type Address, type Connector, isEmbeddedConnector, NetworkSwitchingNotAvailableError, type SignInSession } from '@latchkey/core'
import { lazy, Suspense, useEffect, useState } from 'react'
import { shortAddress } from '../ConnectButton.js'
import { useEns } from '../ens/useEns.js'
import { useAccount } from '../hooks/useAccount.js'
import { useBalance } from '../hooks/useBalance.js'
import { useLatchkeyContext } from '../hooks/useClient.js'
import { useDisconnect } from '../hooks/useDisconnect.js'
import { useSession, useSignIn } from '../hooks/useSignIn.js'
import { useSwitchChain } from '../hooks/useSwitchChain.js'
import type { MessageKey } from '../i18n/en.js'
import { type Translate, useMessages } from '../i18n/useMessages.js'
import { explorerLink, failureText, statusKey } from '../toast/text.js'
import { useTrackedTransactions } from '../toast/transactions.js'
import { Avatar } from './Avatar.js'
import { Dialog } from './Dialog.js'

// Export, import and passkeys: only for the embedded wallet, loaded with it.
const EmbeddedTools = lazy(() => import('./EmbeddedTools.js'))
// Sign-in methods (linked logins, second factor): only for the embedded wallet, loaded with it.
const SignInMethods = lazy(() => import('./SignInMethods.js'))

type Props = { theme: 'light' | 'dark' | 'auto'; onClose(): void }

/** Who is signed in (ENS, email or OAuth account), address, balance, last send, network switcher, explorer link and disconnect. */
export function AccountModal({ theme, onClose }: Props) {
  const t = useMessages()
  const { address, chain, chainId, isConnected, connector } = useAccount()
  const balance = useBalance({ address, chainId })
  const switcher = useSwitchChain()
  const disconnect = useDisconnect()
  const session = useSignIn()
  const [copied, setCopied] = useState(false)
  // The chain last asked for, so a refusal can say where to switch.
  const [target, setTarget] = useState<{ id: number; name: string }>()
  const ens = useEns(address, chainId)
  const identity = useIdentity(address, connector)

  if (!isConnected || !address) return null
  const explorer = chain?.blockExplorers?.default.url
  return (
    <Dialog title={t('account')} theme={theme} onClose={onClose}>
      <div className="lk-account">
        {/* biome-ignore lint/a11y/useSemanticElements: a group of two lines, not a form's fieldset */}
        <div className="lk-identity" role="group" aria-label={t('signedInUser')}>
          <Avatar address={address} name={ens?.name ?? identity.email} src={ens?.avatar} />
          <div className="lk-identity-text">
            <p className="lk-identity-name">{ens?.name ?? identity.email ?? shortAddress(address)}</p>
            {ens && identity.email && <p className="lk-muted lk-small-text">{identity.email}</p>}
            {identity.via && <p className="lk-muted lk-small-text">{t(identity.via)}</p>}
          </div>
        </div>
        <p className="lk-address">{address}</p>
        <div className="lk-row">
          <button
            type="button"
            className="lk-secondary"
            onClick={() =>
              navigator.clipboard.writeText(address).then(
                () => setCopied(true),
                () => setCopied(false),
              )
            }
          >
            {t(copied ? 'copied' : 'copyAddress')}
          </button>
          {explorer && (
            <a className="lk-secondary lk-link" href={`${explorer.replace(/\/$/, '')}/address/${address}`} target="_blank" rel="noopener noreferrer">
              {t('viewOn', { explorer: chain?.blockExplorers?.default.name ?? t('explorer') })}
            </a>
          )}
        </div>
        {/* biome-ignore lint/a11y/useAriaPropsSupportedByRole: the label names the figure for tests and readers that look it up by label */}
        <p className="lk-balance" aria-label={t('balance')} aria-busy={balance.status !== 'success' && balance.status !== 'error'}>
          {balance.status === 'success' && balance.data ? (
            `${formatAmount(balance.data.formatted, t.locale)} ${balance.data.symbol}`
          ) : balance.status === 'error' ? (
            t('balanceUnavailable')
          ) : (
            <>
              <span className="lk-skeleton lk-skeleton-line" aria-hidden="true" />
              <span className="lk-sr-only">{t('loadingBalance')}</span>
            </>
          )}
        </p>
        {balance.status === 'error' && (
          <button type="button" className="lk-text-button" onClick={balance.refetch}>
            {t('tryAgain')}
          </button>
        )}
        <LastTransaction t={t} />
        <h3 className="lk-subheading">{t('network')}</h3>
        <ul className="lk-networks">
          {switcher.chains.map((c) => (
            <li key={c.id}>
              <button
                type="button"
                className="lk-network"
                aria-pressed={c.id === chainId}
                disabled={switcher.isPending}
                onClick={() => {
                  if (c.id === chainId) return
                  setTarget({ id: c.id, name: c.name })
                  switcher.switchChain({ chainId: c.id }).catch(() => {})
                }}
              >
                {`${c.name} (${formatInteger(c.id, t.locale)})`}
              </button>
            </li>
          ))}
        </ul>
        {switcher.error && (
          <p role="alert" className="lk-alert">
            {t.error(switcher.error)}
          </p>
        )}
        {switcher.error instanceof NetworkSwitchingNotAvailableError && target && target.id !== chainId && (
          // The session lacks the chain (WalletConnect): only the wallet can add it.
          <p className="lk-hint" role="note" aria-label={t('switchInWallet')}>
            {t('switchHint', { chain: `${target.name} (${formatInteger(target.id, t.locale)})` })}
          </p>
        )}
        {session.status === 'signedIn' && (
          <div className="lk-row lk-signed-in">
            <p className="lk-muted lk-small-text" role="status" aria-label={t('signInStatus')}>
              {session.session?.expiresAt ? t('signedInUntil', { date: formatDate(session.session.expiresAt, t.locale) }) : t('signedIn')}
            </p>
            <button type="button" className="lk-secondary" onClick={() => void session.signOut()}>
              {t('signOut')}
            </button>
          </div>
        )}
        {isEmbeddedConnector(connector) && (
          <Suspense fallback={<span className="lk-skeleton lk-skeleton-block" aria-hidden="true" />}>
            <EmbeddedTools connector={connector} />
          </Suspense>
        )}
        {isEmbeddedConnector(connector) && (
          <Suspense fallback={<span className="lk-skeleton lk-skeleton-block" aria-hidden="true" />}>
            <SignInMethods connector={connector} />
          </Suspense>
        )}
        <button type="button" className="lk-secondary lk-danger" onClick={() => disconnect.disconnect().then(onClose)}>
          {t('disconnect')}
        </button>
        <p className="lk-muted lk-small-print">{t('connectedAs', { address: shortAddress(address) })}</p>
      </div>
    </Dialog>
  )
}

const viaKey: Partial<Record<string, MessageKey>> = { email: 'viaEmail', recovery: 'viaEmail', passkey: 'viaPasskey', oauth: 'viaOAuth' }

/**
 * Who the backend says is signed in as this address: the email (an OAuth account's too) and how
 * they signed in, from `/auth/session` as the client's sign-in store holds it. An embedded wallet
 * signs in without that store: the modal reads the same session once through the adapter.
 */
function useIdentity(address: Address | undefined, connector: Connector | undefined): { email: string | undefined; via: MessageKey | undefined } {
  const { client } = useLatchkeyContext()
  const { session } = useSession()
  const [read, setRead] = useState<SignInSession | null>()
  const embedded = isEmbeddedConnector(connector)
  useEffect(() => {
    const adapter = client.auth?.adapter
    if (!embedded || session || !adapter?.getSession) return
    let live = true
    adapter.getSession().then(
      (answer) => live && setRead(answer),
      () => {},
    )
    return () => {
      live = false
    }
  }, [client, embedded, session])
  const current = [session, read].find((candidate) => candidate && address && candidate.address.toLowerCase() === address.toLowerCase())
  return {
    email: typeof current?.['email'] === 'string' ? current['email'] : undefined,
    via: typeof current?.['kind'] === 'string' ? viaKey[current['kind']] : undefined,
  }
}

/** The last transaction or batch the app sent through the hooks: its status, why it failed, its explorer link. */
function LastTransaction({ t }: { t: Translate }) {
  const { client } = useLatchkeyContext()
  const last = useTrackedTransactions(client).at(-1)
  if (!last) return null
  const status = t(statusKey(last))
  const link = explorerLink(client, last)
  return (
    <section className="lk-last-transaction" aria-label={t('lastTransaction')}>
      <h3 className="lk-subheading">{t('lastTransaction')}</h3>
      <p className="lk-small-text" data-status={last.status}>
        {status}
        {last.status === 'failed' && ` ${failureText(last, t)}`}
      </p>
      {link && last.status !== 'pending' && (
        <a className="lk-text-button" href={link.href} target="_blank" rel="noopener noreferrer">
          {t('viewOn', { explorer: link.name ?? t('explorer') })}
        </a>
      )}
    </section>
  )
}

/** `10000.123456789` → `10000.1235`; keeps small balances readable. */
export function trimDecimals(formatted: string, digits = 4) {
  const [whole, fraction = ''] = formatted.split('.')
  const kept = fraction.slice(0, digits).replace(/0+$/, '')
  return kept ? `${whole}.${kept}` : `${whole}`
}

/**
 * An amount as the locale writes it (`10000.123456` → `10,000.1234` in English, `10.000,1234` in
 * German), at most four decimals. The decimal string goes to Intl whole: no float rounding of large balances.
 */
export function formatAmount(formatted: string, locale: string) {
  const trimmed = trimDecimals(formatted)
  return new Intl.NumberFormat(locale, { maximumFractionDigits: 4 }).format(trimmed as unknown as number)
}

/** A chain id in the locale's digits, without grouping (`31337`, not `31,337`). */
export const formatInteger = (value: number, locale: string) => new Intl.NumberFormat(locale, { useGrouping: false }).format(value)

/** A date and time as the locale writes them. */
export const formatDate = (value: string | number | Date, locale: string) =>
  new Intl.DateTimeFormat(locale, { dateStyle: 'medium', timeStyle: 'short' }).format(new Date(value))
