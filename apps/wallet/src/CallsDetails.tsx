import { formatEther } from 'viem'

/** A `wallet_sendCalls` request as the user reads it: each call's recipient, value and data. */
export function CallsDetails({ params }: { params: unknown }) {
  const [request] = Array.isArray(params) ? (params as { calls?: { to?: string; value?: string; data?: string }[] }[]) : []
  const calls = request?.calls ?? []
  return (
    <ol aria-label="Calls" className="calls">
      {calls.map((call, index) => (
        // biome-ignore lint/suspicious/noArrayIndexKey: the calls of one request never reorder
        <li key={index}>
          <span className="mono">{call.to ?? '(contract creation)'}</span> <span>{formatEther(BigInt(call.value ?? 0))} ETH</span>
          {call.data && call.data !== '0x' && <span className="mono"> {call.data}</span>}
        </li>
      ))}
    </ol>
  )
}
