import { type BaseError, getPublicClient, waitForTransactionReceipt } from '@latchkey/core'
import {
  ConnectButton,
  useAccount,
  useClient,
  useDisconnect,
  useSendTransaction,
  useSignIn,
  useSignMessage,
  useSignTypedData,
  useSwitchChain,
} from '@latchkey/react'
import { useId, useState } from 'react'
import { parseEther } from 'viem'
import { BatchCard } from './BatchCard.js'
import { LanguageSelect } from './Language.js'
import { TokenPanel } from './TokenPanel.js'
import { mailTypedData, RECIPIENT } from './typedData.js'

export function App({ language, onLanguage }: { language: string | undefined; onLanguage(locale: string): void }) {
  const { address, chain, chainId, isConnected, status } = useAccount()
  return (
    <div className="page">
      <header className="topbar">
        <a className="brand" href="/">
          <span className="brand-mark" aria-hidden="true" />
          Latchkey <span className="brand-sub">demo</span>
        </a>
        <span className="topbar-actions">
          <LanguageSelect value={language} onChange={onLanguage} />
          <ConnectButton />
        </span>
      </header>
      <main>
        {isConnected && address ? (
          <Connected address={address} chainId={chainId} chainName={chain?.name ?? 'Unknown network'} />
        ) : (
          <section className="hero">
            <h1>Sign in with your wallet</h1>
            <p>
              Connect a browser wallet to try signing and sending on two local chains. No extension? Pick the <strong>Latchkey Dev Wallet</strong>: it holds a
              local test key and asks you before it signs anything.
            </p>
            <p>
              Or connect and sign in at once: with WalletConnect, one approval in the wallet does both.{' '}
              <ConnectButton requireSignIn label="Connect and sign in" />
            </p>
            {status === 'reconnecting' && <p role="status">Restoring your session…</p>}
          </section>
        )}
      </main>
      <footer className="footer">Everything here runs on your machine: two anvil chains and this page.</footer>
    </div>
  )
}

function Connected({ address, chainId, chainName }: { address: `0x${string}`; chainId: number; chainName: string }) {
  const ids = { address: useId(), chain: useId(), signature: useId(), hash: useId(), message: useId(), network: useId(), session: useId() }
  const signIn = useSignIn()
  const [message, setMessage] = useState('Hello from Latchkey! Signing this costs nothing.')
  const signMessage = useSignMessage()
  const signTypedData = useSignTypedData()
  const sendTransaction = useSendTransaction()
  const switchChain = useSwitchChain()
  const disconnect = useDisconnect()
  const [lastError, setLastError] = useState<BaseError | null>(null)
  const [signature, setSignature] = useState<string>('')
  const [receipt, setReceipt] = useState<string>('')
  const client = useClient()

  async function send() {
    setReceipt('')
    const hash = await sendTransaction.sendTransaction({ to: RECIPIENT, value: parseEther('0.001') })
    setReceipt('Waiting for the block…')
    const { status, blockNumber } = await waitForTransactionReceipt(client, { hash, chainId })
    setReceipt(status === 'success' ? `Confirmed in block ${blockNumber}` : `Reverted in block ${blockNumber}`)
  }

  /** The local chains are anvil: a new wallet (an embedded one, say) gets test ether from the chain itself. */
  async function fund() {
    await getPublicClient(client, { chainId }).request({ method: 'anvil_setBalance', params: [address, '0x8AC7230489E80000'] } as never)
    setReceipt('Added 10 test ETH')
  }

  async function run<value>(action: () => Promise<value>, onValue: (value: value) => void) {
    setLastError(null)
    try {
      onValue(await action())
    } catch (error) {
      setLastError(error as BaseError)
    }
  }

  return (
    <div className="grid">
      <section className="card" aria-labelledby="wallet-heading">
        <h2 id="wallet-heading">Your wallet</h2>
        <dl className="facts">
          <dt id={ids.address}>Address</dt>
          <dd>
            <output aria-labelledby={ids.address} className="mono">
              {address}
            </output>
          </dd>
          <dt id={ids.chain}>Chain ID</dt>
          <dd>
            <output aria-labelledby={ids.chain}>{chainId}</output> <span className="muted">{chainName}</span>
          </dd>
        </dl>
        <label htmlFor={ids.network}>Network</label>
        <select
          id={ids.network}
          value={chainId}
          disabled={switchChain.isPending}
          onChange={(event) =>
            run(
              () => switchChain.switchChain({ chainId: Number(event.target.value) }),
              () => {},
            )
          }
        >
          {switchChain.chains.map((chain) => (
            <option key={chain.id} value={chain.id}>{`${chain.name} (${chain.id})`}</option>
          ))}
        </select>
        <button
          type="button"
          className="secondary"
          onClick={() =>
            run(
              () => disconnect.disconnect(),
              () => {},
            )
          }
        >
          Disconnect
        </button>
      </section>

      <section className="card" aria-labelledby="session-heading">
        <h2 id="session-heading">Sign in</h2>
        <p className="muted">Connected is not signed in: sign one message and our backend knows it is you (EIP-4361).</p>
        <div className="row">
          <button
            type="button"
            disabled={signIn.isPending || signIn.status === 'signedIn'}
            onClick={() =>
              run(
                () => signIn.signIn(),
                () => {},
              )
            }
          >
            {signIn.status === 'signing' ? 'Check your wallet…' : signIn.status === 'verifying' ? 'Signing in…' : 'Sign in'}
          </button>
          <button
            type="button"
            className="secondary"
            disabled={signIn.status !== 'signedIn'}
            onClick={() =>
              run(
                () => signIn.signOut(),
                () => {},
              )
            }
          >
            Sign out
          </button>
        </div>
        <p className="result">
          <span id={ids.session}>Session</span>
          <output aria-labelledby={ids.session} className="mono">
            {signIn.status === 'signedIn' ? (signIn.session?.address ?? '') : ''}
          </output>
        </p>
      </section>

      <section className="card" aria-labelledby="sign-heading">
        <h2 id="sign-heading">Sign</h2>
        <label htmlFor={ids.message}>Message</label>
        <textarea id={ids.message} rows={3} value={message} onChange={(event) => setMessage(event.target.value)} />
        <div className="row">
          <button type="button" disabled={signMessage.isPending} onClick={() => run(() => signMessage.signMessage({ message }), setSignature)}>
            Sign message
          </button>
          <button
            type="button"
            disabled={signTypedData.isPending}
            onClick={() => run(() => signTypedData.signTypedData(mailTypedData({ from: address, chainId, contents: message })), setSignature)}
          >
            Sign typed data
          </button>
        </div>
        <p className="result">
          <span id={ids.signature}>Signature</span>
          <output aria-labelledby={ids.signature} className="mono">
            {signature}
          </output>
        </p>
      </section>

      <section className="card" aria-labelledby="send-heading">
        <h2 id="send-heading">Send</h2>
        <p className="muted">Sends 0.001 ETH on {chainName} to a test account.</p>
        <button type="button" disabled={sendTransaction.isPending} onClick={() => run(send, () => {})}>
          Send transaction
        </button>
        <button type="button" className="secondary" onClick={() => run(fund, () => {})}>
          Get test ETH
        </button>
        <p className="result">
          <span id={ids.hash}>Transaction hash</span>
          <output aria-labelledby={ids.hash} className="mono">
            {sendTransaction.data ?? ''}
          </output>
          <span className="muted" aria-live="polite">
            {receipt}
          </span>
        </p>
      </section>

      <BatchCard chainName={chainName} run={(action) => run(action, () => {})} />

      <TokenPanel chainName={chainName} run={(action) => run(action, () => {})} />

      {lastError && (
        <div role="alert" className="alert">
          <strong>{lastError.shortMessage ?? lastError.message}</strong>
          {lastError.details && lastError.details !== lastError.shortMessage && <span className="muted"> {lastError.details}</span>}
        </div>
      )}
    </div>
  )
}
