import { getPublicClient } from '@latchkey/core'
import { useClient } from '@latchkey/react'
import { useEffect, useState } from 'react'
import { formatEther } from 'viem'

/** A tiny block explorer for the local chains, so the account modal's explorer link leads somewhere. */
export function Explorer({ chainId, address }: { chainId: number; address: `0x${string}` }) {
  const client = useClient()
  const [facts, setFacts] = useState<{ balance: string; nonce: number } | { error: string }>()
  useEffect(() => {
    let live = true
    const run = async () => {
      try {
        const publicClient = getPublicClient(client, { chainId })
        const [balance, nonce] = await Promise.all([publicClient.getBalance({ address }), publicClient.getTransactionCount({ address })])
        if (live) setFacts({ balance: formatEther(balance), nonce })
      } catch (error) {
        if (live) setFacts({ error: (error as Error).message.split('\n')[0] ?? 'Unknown error' })
      }
    }
    void run()
    return () => {
      live = false
    }
  }, [client, chainId, address])
  return (
    <main className="page">
      <section className="card">
        <h1>Address on chain {chainId}</h1>
        <p className="mono">{address}</p>
        {!facts && <p role="status">Loading…</p>}
        {facts && 'error' in facts && <p role="alert">{facts.error}</p>}
        {facts && 'balance' in facts && (
          <p>
            Balance {facts.balance} ETH · {facts.nonce} transactions sent
          </p>
        )}
        <a href="/">Back to the demo</a>
      </section>
    </main>
  )
}
