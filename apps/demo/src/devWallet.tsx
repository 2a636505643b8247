import { announceProvider, createDevWallet, type DevWallet, type DevWalletPrompt, devWalletInfo } from '@latchkey/core/dev'
import { useEffect, useId, useRef, useState, useSyncExternalStore } from 'react'
import { createRoot } from 'react-dom/client'
import { chains } from './chains.js'

/** Anvil's first and third test keys: funded on both local chains. Never use them anywhere else. */
const ANVIL_KEY_0 = '0xac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80'
const ANVIL_KEY_2 = '0x5de4111afa1a4b94908f83103eb1f1706367c2e68ca870fc3fb9a804cdab365a'

/** The wallet's own storage, apart from the app's `latchkey.*` keys, as an extension's would be. */
const walletStorage = {
  chainId: 'latchkeyDevWallet.chainId',
  authorized: 'latchkeyDevWallet.authorized',
  account: 'latchkeyDevWallet.account',
}

type Pending = { prompt: DevWalletPrompt; resolve: (approved: boolean) => void }
let queue: readonly Pending[] = []
const listeners = new Set<() => void>()
function setQueue(next: readonly Pending[]) {
  queue = next
  for (const listener of listeners) listener()
}

/**
 * Starts the Latchkey Dev Wallet: an EIP-1193 wallet that announces itself through EIP-6963,
 * holds an anvil test key, asks for approval in its own small window and signs locally.
 */
export function startDevWallet() {
  const wallet = createDevWallet({
    privateKey: ANVIL_KEY_0,
    otherKeys: [ANVIL_KEY_2],
    accountIndex: Number(localStorage.getItem(walletStorage.account) ?? 0),
    onAccountChanged: (index) => localStorage.setItem(walletStorage.account, String(index)),
    chains,
    chainId: Number(localStorage.getItem(walletStorage.chainId) ?? chains[0].id),
    authorized: localStorage.getItem(walletStorage.authorized) === 'true',
    onChainChanged: (chainId) => localStorage.setItem(walletStorage.chainId, String(chainId)),
    onAuthorizedChanged: (authorized) =>
      authorized ? localStorage.setItem(walletStorage.authorized, 'true') : localStorage.removeItem(walletStorage.authorized),
    approve: (prompt) => new Promise<boolean>((resolve) => setQueue([...queue, { prompt, resolve }])),
  })
  announceProvider(window, { info: { ...devWalletInfo, uuid: crypto.randomUUID() }, provider: wallet })
  const host = document.createElement('div')
  host.id = 'latchkey-dev-wallet'
  document.body.append(host)
  createRoot(host).render(<DevWalletWindow wallet={wallet} />)
}

/** The wallet's confirm window, in the browser's top layer like an extension popup. */
function DevWalletWindow({ wallet }: { wallet: DevWallet }) {
  const [index, setIndex] = useState(() => wallet.accounts.indexOf(wallet.account))
  const address = wallet.accounts[index]!.address
  const current = useSyncExternalStore(
    (listener) => {
      listeners.add(listener)
      return () => void listeners.delete(listener)
    },
    () => queue[0],
  )
  const ref = useRef<HTMLElement>(null)
  useEffect(() => {
    const element = ref.current
    if (!element) return
    if (current && !element.matches(':popover-open')) element.showPopover()
    if (!current && element.matches(':popover-open')) element.hidePopover()
  }, [current])

  const answer = (approved: boolean) => {
    if (!current) return
    setQueue(queue.slice(1))
    current.resolve(approved)
  }

  const switchId = useId()
  return (
    <>
      {/* The wallet's own account list, as an extension's toolbar menu would be. */}
      <div className="dev-wallet-switch">
        <label htmlFor={switchId}>Dev wallet account</label>
        <select
          id={switchId}
          value={index}
          onChange={(event) => {
            const next = Number(event.target.value)
            setIndex(next)
            wallet.selectAccount(next)
          }}
        >
          {wallet.accounts.map((account, i) => (
            <option key={account.address} value={i}>{`${account.address.slice(0, 6)}…${account.address.slice(-4)}`}</option>
          ))}
        </select>
      </div>
      <section ref={ref} popover="manual" role="dialog" aria-label={devWalletInfo.name} className="dev-wallet">
        <header>
          <img src={devWalletInfo.icon} alt="" width={20} height={20} />
          <strong>{devWalletInfo.name}</strong>
        </header>
        {current && (
          <>
            <p className="dev-wallet-method">{titleOf(current.prompt.method)}</p>
            <p className="dev-wallet-summary">{current.prompt.summary}</p>
            <p className="dev-wallet-account">
              Account <code>{`${address.slice(0, 6)}…${address.slice(-4)}`}</code>
            </p>
            <div className="dev-wallet-actions">
              <button type="button" onClick={() => answer(false)}>
                Reject
              </button>
              <button type="button" className="primary" onClick={() => answer(true)}>
                Approve
              </button>
            </div>
          </>
        )}
      </section>
    </>
  )
}

function titleOf(method: string) {
  switch (method) {
    case 'eth_requestAccounts':
      return 'Connection request'
    case 'personal_sign':
      return 'Signature request'
    case 'eth_signTypedData_v4':
      return 'Typed data signature request'
    case 'eth_sendTransaction':
      return 'Transaction request'
    case 'wallet_switchEthereumChain':
      return 'Switch network'
    case 'wallet_sendCalls':
      return 'Batch request'
    default:
      return method
  }
}
