'use client'
import { isEmbeddedConnector, NetworkSwitchingNotAvailableError } from '@latchkey/core'
import { lazy, Suspense, useState } from 'react'
import { shortAddress } from '../ConnectButton.js'
import { useAccount } from '../hooks/useAccount.js'
import { useBalance } from '../hooks/useBalance.js'
import { useDisconnect } from '../hooks/useDisconnect.js'
import { useSignIn } from '../hooks/useSignIn.js'
import { useSwitchChain } from '../hooks/useSwitchChain.js'
import { Dialog } from './Dialog.js'

// Export, import and passkeys: only for the embedded wallet, loaded with it.
const EmbeddedTools = lazy(() => import('./EmbeddedTools.js'))

type Props = { theme: 'light' | 'dark' | 'auto'; onClose(): void }

/** Address, balance, network switcher, explorer link and disconnect. */
export function AccountModal({ theme, onClose }: Props) {
  const { address, chain, chainId, isConnected, connector } = useAccount()
  const balance = useBalance({ address, chainId })
  const switcher = useSwitchChain()
  const disconnect = useDisconnect()
  const session = useSignIn()
  const [copied, setCopied] = useState(false)
  // The chain last asked for, so a refusal can say where to switch.
  const [target, setTarget] = useState<{ id: number; name: string }>()

  if (!isConnected || !address) return null
  const explorer = chain?.blockExplorers?.default.url
  return (
    <Dialog title="Account" theme={theme} onClose={onClose}>
      <div className="lk-account">
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
            {copied ? 'Copied' : 'Copy address'}
          </button>
          {explorer && (
            <a className="lk-secondary lk-link" href={`${explorer.replace(/\/$/, '')}/address/${address}`} target="_blank" rel="noopener noreferrer">
              View on {chain?.blockExplorers?.default.name ?? 'explorer'}
            </a>
          )}
        </div>
        {/* biome-ignore lint/a11y/useAriaPropsSupportedByRole: the label names the figure for tests and readers that look it up by label */}
        <p className="lk-balance" aria-label="Balance">
          {balance.status === 'success' && balance.data
            ? `${trimDecimals(balance.data.formatted)} ${balance.data.symbol}`
            : balance.status === 'error'
              ? 'Balance unavailable'
              : 'Loading balance…'}
        </p>
        <h3 className="lk-subheading">Network</h3>
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
                {`${c.name} (${c.id})`}
              </button>
            </li>
          ))}
        </ul>
        {switcher.error && (
          <p role="alert" className="lk-alert">
            {switcher.error.shortMessage}
          </p>
        )}
        {switcher.error instanceof NetworkSwitchingNotAvailableError && target && target.id !== chainId && (
          // The session lacks the chain (WalletConnect): only the wallet can add it.
          <p className="lk-hint" role="note" aria-label="Switch in your wallet">
            Open your wallet and switch to {target.name} ({target.id}) there; this app follows the wallet's network.
          </p>
        )}
        {session.status === 'signedIn' && (
          <div className="lk-row lk-signed-in">
            <p className="lk-muted lk-small-text" role="status" aria-label="Sign-in status">
              Signed in{session.session?.expiresAt ? ` until ${new Date(session.session.expiresAt).toLocaleString()}` : ''}
            </p>
            <button type="button" className="lk-secondary" onClick={() => void session.signOut()}>
              Sign out
            </button>
          </div>
        )}
        {isEmbeddedConnector(connector) && (
          <Suspense fallback={<span className="lk-spinner" aria-hidden="true" />}>
            <EmbeddedTools connector={connector} />
          </Suspense>
        )}
        <button type="button" className="lk-secondary lk-danger" onClick={() => disconnect.disconnect().then(onClose)}>
          Disconnect
        </button>
        <p className="lk-muted lk-small-print">Connected as {shortAddress(address)}</p>
      </div>
    </Dialog>
  )
}

/** `10000.123456789` → `10000.1235`; keeps small balances readable. */
export function trimDecimals(formatted: string, digits = 4) {
  const [whole, fraction = ''] = formatted.split('.')
  const kept = fraction.slice(0, digits).replace(/0+$/, '')
  return kept ? `${whole}.${kept}` : `${whole}`
}
