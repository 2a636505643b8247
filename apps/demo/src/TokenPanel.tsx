import { useId } from 'react'
import { TEST_ACCOUNT, TOKEN_SYMBOL } from './testToken.js'
import { describeBalance, useTestToken } from './useTestToken.js'

/**
 * The Test Token card: what the embedded wallet's consent frame decodes (a transfer, an unlimited
 * approval) and what an ERC-7715 grant lets it sign without asking. Every wallet can use the
 * first three buttons; `run` shows a failure as the demo shows every other.
 */
export function TokenPanel({ chainName, run }: { chainName: string; run(action: () => Promise<unknown>): void }) {
  const token = useTestToken()
  const ids = { balance: useId(), account: useId(), hash: useId() }
  return (
    <section className="card" aria-labelledby="token-heading">
      <h2 id="token-heading">Test Token</h2>
      <p className="muted">
        {TOKEN_SYMBOL} on {chainName}: get some, send 1.5 to the test account, approve it for unlimited {TOKEN_SYMBOL}, or let this app send up to 5 a day
        without asking, for an hour.
      </p>
      <dl className="facts">
        <dt id={ids.balance}>Token balance</dt>
        <dd>
          <output aria-labelledby={ids.balance}>{describeBalance(token.balance)}</output>
        </dd>
        <dt id={ids.account}>Test account</dt>
        <dd>
          <output aria-labelledby={ids.account} className="mono">
            {TEST_ACCOUNT}
          </output>
        </dd>
      </dl>
      <div className="row">
        <button type="button" className="secondary" disabled={token.pending === 'mint'} onClick={() => run(token.mint)}>
          Get test tokens
        </button>
        <button type="button" disabled={token.pending === 'send'} onClick={() => run(token.send)}>
          Send tokens
        </button>
        <button type="button" disabled={token.pending === 'approve'} onClick={() => run(token.approveUnlimited)}>
          Approve unlimited
        </button>
        <button type="button" disabled={token.pending === 'grant'} onClick={() => run(token.grantPermission)}>
          Grant permission
        </button>
      </div>
      <p className="result">
        <span id={ids.hash}>Token transaction</span>
        <output aria-labelledby={ids.hash} className="mono">
          {token.hash ?? ''}
        </output>
        <span className="muted" aria-live="polite">
          {token.status}
        </span>
      </p>
    </section>
  )
}
