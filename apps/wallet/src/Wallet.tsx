import { chainsOf, type PendingRequest, type ProposalParams, type Session } from '@latchkey/walletconnect'
import { type FormEvent, useEffect, useState, useSyncExternalStore } from 'react'
import { formatEther, hexToString, isHex } from 'viem'
import { canScan, scanQrCode } from './scan.js'
import type { PendingAuthenticate, Wallet as WalletController, WalletState } from './wallet.js'

/** The reference wallet's page: pair, approve or reject, sign, switch network, disconnect. */
export function Wallet({ wallet, initialUri }: { wallet: WalletController; initialUri?: string | undefined }) {
  const state = useSyncExternalStore(wallet.subscribe, wallet.getState)
  const [error, setError] = useState<string>()
  const [uri, setUri] = useState('')
  const [busy, setBusy] = useState(false)

  /** Runs a user action; its failure shows in the alert, and nothing else changes. */
  async function act(action: () => Promise<void>) {
    setError(undefined)
    setBusy(true)
    try {
      await action()
    } catch (cause) {
      setError((cause as { shortMessage?: string }).shortMessage ?? (cause as Error).message)
    } finally {
      setBusy(false)
    }
  }

  // A deep link (`/?uri=wc:…`) pairs as soon as the page opens.
  // biome-ignore lint/correctness/useExhaustiveDependencies: pairs once per deep link; act is recreated each render
  useEffect(() => {
    if (initialUri) void act(() => wallet.pair(initialUri))
  }, [wallet, initialUri])

  function onPair(event: FormEvent) {
    event.preventDefault()
    void act(async () => {
      await wallet.pair(uri)
      setUri('')
    })
  }

  return (
    <main className="wallet">
      <header>
        <h1>Latchkey Wallet</h1>
        <p>
          Account{' '}
          <output aria-label="Address" className="mono">
            {state.address}
          </output>
        </p>
        <label>
          Account{' '}
          <select value={state.address} onChange={(event) => void act(() => wallet.setAccount(event.target.value as `0x${string}`))}>
            {state.addresses.map((address) => (
              <option key={address} value={address}>
                {`${address.slice(0, 6)}…${address.slice(-4)}`}
              </option>
            ))}
          </select>
        </label>
        <label>
          Network{' '}
          <select value={state.chainId} onChange={(event) => void act(() => wallet.setChain(Number(event.target.value)))}>
            {state.chains.map((chain) => (
              <option key={chain.id} value={chain.id}>
                {chain.name} ({chain.id})
              </option>
            ))}
          </select>
        </label>
      </header>

      {error && <p role="alert">{error}</p>}

      <section aria-labelledby="pair-heading">
        <h2 id="pair-heading">Pair with a dapp</h2>
        <form onSubmit={onPair}>
          <label>
            Pairing URI
            <input value={uri} onChange={(event) => setUri(event.target.value)} placeholder="wc:…" autoComplete="off" spellCheck={false} />
          </label>
          <button type="submit" disabled={busy || !uri.trim()}>
            Pair
          </button>
          {canScan() && (
            <button type="button" onClick={() => void act(async () => wallet.pair(await scanQrCode()))}>
              Scan QR code
            </button>
          )}
        </form>
      </section>

      {state.proposals.map((proposal) => (
        <ProposalCard
          key={proposal.id}
          proposal={proposal}
          busy={busy}
          onAnswer={(approve) => act(() => (approve ? wallet.approve(proposal.id) : wallet.reject(proposal.id)))}
        />
      ))}

      {state.authenticates.map((pending) => (
        <AuthenticateCard
          key={pending.id}
          pending={pending}
          busy={busy}
          onAnswer={(approve) => act(() => (approve ? wallet.approveAuthenticate(pending.id) : wallet.rejectAuthenticate(pending.id)))}
        />
      ))}

      {state.requests.map((request) => (
        <RequestCard
          key={request.id}
          request={request}
          session={state.sessions.find((session) => session.topic === request.topic)}
          busy={busy}
          onAnswer={(approve) => act(() => wallet.answer(request.id, approve))}
        />
      ))}

      <section aria-labelledby="sessions-heading">
        <h2 id="sessions-heading">Sessions</h2>
        {state.sessions.length === 0 ? (
          <p className="muted">No dapp is connected.</p>
        ) : (
          <ul className="sessions">
            {state.sessions.map((session) => (
              <li key={session.topic} aria-label={`Session with ${session.peer.metadata.name}`}>
                <strong>{session.peer.metadata.name}</strong> <span className="muted">{session.peer.metadata.url}</span>
                <div className="muted">{chainsOfSession(session).join(', ')}</div>
                <button type="button" disabled={busy} onClick={() => void act(() => wallet.disconnect(session.topic))}>
                  Disconnect
                </button>
              </li>
            ))}
          </ul>
        )}
      </section>

      <Activity state={state} />
    </main>
  )
}

/** One-click sign-in: the dapp asks to connect and sign in at once; the user reads each message before "Approve". */
function AuthenticateCard({ pending, busy, onAnswer }: { pending: PendingAuthenticate; busy: boolean; onAnswer(approve: boolean): Promise<void> }) {
  const { metadata } = pending.request.requester
  return (
    <article className="card" aria-label={`Sign-in request from ${metadata.name}`}>
      <h2>{metadata.name} asks you to connect and sign in</h2>
      <p className="muted">{metadata.url}</p>
      {pending.messages.length === 0 ? (
        <p role="alert">This wallet has none of the chains or methods {metadata.name} asks for.</p>
      ) : (
        pending.messages.map(({ chainId, message }) => (
          <figure key={chainId} aria-label={`Sign-in message for ${chainId}`}>
            <figcaption>Message for {chainId}</figcaption>
            <pre className="mono">{message}</pre>
          </figure>
        ))
      )}
      {pending.messages.length === 0 ? (
        <div className="actions">
          <button type="button" disabled={busy} onClick={() => void onAnswer(false)}>
            Reject
          </button>
        </div>
      ) : (
        <Answer busy={busy} onAnswer={onAnswer} />
      )}
    </article>
  )
}

function ProposalCard({ proposal, busy, onAnswer }: { proposal: ProposalParams; busy: boolean; onAnswer(approve: boolean): Promise<void> }) {
  const { metadata } = proposal.proposer
  const asked = [...Object.entries(proposal.requiredNamespaces), ...Object.entries(proposal.optionalNamespaces)]
  const chains = [...new Set(asked.flatMap(([key, value]) => value.chains ?? (key.includes(':') ? [key] : [])))]
  const methods = [...new Set(asked.flatMap(([, value]) => value.methods))]
  return (
    <article className="card" aria-label={`Session proposal from ${metadata.name}`}>
      <h2>{metadata.name} wants to connect</h2>
      <p className="muted">{metadata.url}</p>
      <dl>
        <dt>Chains</dt>
        <dd>{chains.join(', ') || 'none'}</dd>
        <dt>Methods</dt>
        <dd>{methods.join(', ') || 'none'}</dd>
      </dl>
      <Answer busy={busy} onAnswer={onAnswer} />
    </article>
  )
}

function RequestCard({
  request,
  session,
  busy,
  onAnswer,
}: {
  request: PendingRequest
  session: Session | undefined
  busy: boolean
  onAnswer(approve: boolean): Promise<void>
}) {
  const { method } = request.params.request
  return (
    <article className="card" aria-label={`Request ${method}`}>
      <h2>
        {session?.peer.metadata.name ?? 'A dapp'} asks: {method}
      </h2>
      <p className="muted">on {request.params.chainId}</p>
      <RequestDetails request={request} />
      <Answer busy={busy} onAnswer={onAnswer} />
    </article>
  )
}

/** What the user is asked to approve, readable: the message text, the typed data, the transfer. */
function RequestDetails({ request }: { request: PendingRequest }) {
  const { method, params } = request.params.request
  const list = Array.isArray(params) ? (params as unknown[]) : []
  if (method === 'personal_sign' || method === 'eth_sign') {
    const message = String(method === 'personal_sign' ? list[0] : list[1])
    // biome-ignore lint/a11y/useAriaPropsSupportedByRole: the label names the request's content for tests and readers that look it up by label
    return <pre aria-label="Message">{isHex(message) ? readable(message) : message}</pre>
  }
  if (method.startsWith('eth_signTypedData')) {
    const data = typeof list[1] === 'string' ? JSON.parse(list[1]) : list[1]
    // biome-ignore lint/a11y/useAriaPropsSupportedByRole: the label names the request's content for tests and readers that look it up by label
    return <pre aria-label="Typed data">{JSON.stringify(data, null, 2)}</pre>
  }
  if (method === 'eth_sendTransaction' || method === 'eth_signTransaction') {
    const tx = (list[0] ?? {}) as { to?: string; value?: string; data?: string }
    return (
      <dl aria-label="Transaction">
        <dt>To</dt>
        <dd className="mono">{tx.to ?? '(contract creation)'}</dd>
        <dt>Value</dt>
        <dd>{formatEther(BigInt(tx.value ?? 0))} ETH</dd>
        {tx.data && tx.data !== '0x' && (
          <>
            <dt>Data</dt>
            <dd className="mono">{tx.data}</dd>
          </>
        )}
      </dl>
    )
  }
  return <pre>{JSON.stringify(params, null, 2)}</pre>
}

function Answer({ busy, onAnswer }: { busy: boolean; onAnswer(approve: boolean): Promise<void> }) {
  return (
    <div className="actions">
      <button type="button" disabled={busy} onClick={() => void onAnswer(false)}>
        Reject
      </button>
      <button type="button" className="primary" disabled={busy} onClick={() => void onAnswer(true)}>
        Approve
      </button>
    </div>
  )
}

function Activity({ state }: { state: WalletState }) {
  if (!state.log.length) return null
  return (
    <section aria-labelledby="activity-heading">
      <h2 id="activity-heading">Activity</h2>
      <ol className="log">
        {state.log.map((entry) => (
          <li key={`${entry.at}-${entry.text}`}>
            <time>{new Date(entry.at).toLocaleTimeString()}</time> {entry.text}
          </li>
        ))}
      </ol>
    </section>
  )
}

function chainsOfSession(session: Session): string[] {
  return [...new Set(Object.values(session.namespaces).flatMap(chainsOf))]
}

/** UTF-8 text when the bytes are text, else the hex as sent. */
function readable(hex: `0x${string}`): string {
  try {
    const text = hexToString(hex)
    return /^[\p{L}\p{N}\p{P}\p{S}\p{Z}\n\r\t]*$/u.test(text) ? text : hex
  } catch {
    return hex
  }
}
