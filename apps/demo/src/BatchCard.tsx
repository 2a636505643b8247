import { type Call, getPublicClient } from '@latchkey/core'
import { useAccount, useClient, useSendCalls, useWaitForCallsStatus } from '@latchkey/react'
import { useId, useState } from 'react'
import { type Address, encodeFunctionData, erc20Abi, parseAbi, parseEther } from 'viem'
import { TOKEN, TOKEN_SYMBOL } from './testToken.js'
import { BATCH_RECIPIENTS } from './typedData.js'

/** The backend's ERC-7677 paymaster service (dev.json's `paymaster`): without it, the app pays no gas. */
const PAYMASTER_URL = import.meta.env.VITE_LATCHKEY_PAYMASTER_URL
/** The token paymaster (dev.json's `contracts.tokenPaymaster`): without it, no gas in TKN. */
const TOKEN_PAYMASTER = import.meta.env.VITE_LATCHKEY_TOKEN_PAYMASTER
/**
 * What "Pay gas in TKN" lets the token paymaster take: approved by the batch's first call while
 * less than the floor is left. The paymaster's guarantor fronts the fee of that first operation
 * (OpenZeppelin's PaymasterERC20Guarantor), as the account has approved nothing before it runs.
 */
const GAS_ALLOWANCE = parseEther('20')
const GAS_ALLOWANCE_FLOOR = parseEther('5')

/** Who pays the batch's network fee: the app (its paymaster), the user in TKN (the token paymaster), or the user in ETH. */
type Fee = 'sponsored' | 'token' | 'eth'

const MINT = parseAbi(['function mint(address to, uint256 amount)'])

/**
 * The Batch card: two calls in one request (EIP-5792). Paid in ETH, it sends 0.001 ETH to each of
 * two test accounts; sponsored or paid in TKN (what the demo's paymaster policy sponsors: the test
 * token's calls), it mints 1 TKN to each, so a user with no ETH at all can send it. Paid in TKN,
 * the account's first batch also approves the token paymaster for 20 TKN. The embedded wallet's
 * users start with the app paying; other wallets with ETH.
 */
export function BatchCard({ chainName, run }: { chainName: string; run(action: () => Promise<unknown>): void }) {
  const client = useClient()
  const { address, chainId, connector } = useAccount()
  const [chosen, setChosen] = useState<Fee | undefined>(undefined)
  const fee: Fee = PAYMASTER_URL ? (chosen ?? (connector?.type === 'embedded' ? 'sponsored' : 'eth')) : 'eth'
  const sendCalls = useSendCalls()
  const batch = useWaitForCallsStatus({ id: sendCalls.data?.id })
  const ids = { fee: useId(), status: useId() }
  const mint = (to: Address) => ({ to: TOKEN, data: encodeFunctionData({ abi: MINT, functionName: 'mint', args: [to, parseEther('1')] }) })
  const [first, second] = BATCH_RECIPIENTS

  /** The batch's calls; paid in TKN, an approval of the token paymaster first while the account has approved too little. */
  async function callsFor(fee: Fee): Promise<readonly [Call, ...Call[]]> {
    if (fee === 'eth')
      return [
        { to: first, value: parseEther('0.001') },
        { to: second, value: parseEther('0.001') },
      ]
    const mints = [mint(first), mint(second)] as const
    if (fee !== 'token' || !TOKEN_PAYMASTER || !address) return mints
    const chain = getPublicClient(client, { chainId })
    const allowance = await chain.readContract({ address: TOKEN, abi: erc20Abi, functionName: 'allowance', args: [address, TOKEN_PAYMASTER] })
    if (allowance >= GAS_ALLOWANCE_FLOOR) return mints
    return [{ to: TOKEN, data: encodeFunctionData({ abi: erc20Abi, functionName: 'approve', args: [TOKEN_PAYMASTER, GAS_ALLOWANCE] }) }, ...mints]
  }
  return (
    <section className="card" aria-labelledby="batch-heading">
      <h2 id="batch-heading">Batch</h2>
      <p className="muted">
        {fee === 'eth'
          ? `Sends 0.001 ETH on ${chainName} to each of two test accounts, in one request (EIP-5792).`
          : `Mints 1 ${TOKEN_SYMBOL} on ${chainName} to each of two test accounts, in one request (EIP-5792).`}
      </p>
      {PAYMASTER_URL && (
        <p>
          <label htmlFor={ids.fee}>Gas</label>{' '}
          <select id={ids.fee} value={fee} onChange={(event) => setChosen(event.target.value as Fee)}>
            <option value="sponsored">Paid by the app</option>
            {TOKEN_PAYMASTER && <option value="token">Pay gas in {TOKEN_SYMBOL}</option>}
            <option value="eth">Paid in ETH</option>
          </select>
        </p>
      )}
      <button
        type="button"
        disabled={sendCalls.isPending}
        onClick={() =>
          run(async () =>
            sendCalls.sendCalls({
              calls: await callsFor(fee),
              // ERC-7677: the app's paymaster pays, or takes TKN for it; no silent switch to ETH.
              ...(fee !== 'eth' && PAYMASTER_URL
                ? { sponsorship: { paymasterUrl: PAYMASTER_URL, ...(fee === 'token' ? { context: { token: TOKEN } } : {}) } }
                : {}),
            }),
          )
        }
      >
        Send batch
      </button>
      <p className="result">
        <span id={ids.status}>Batch status</span>
        <output aria-labelledby={ids.status} className="mono">
          {sendCalls.data ? describeBatch(sendCalls.data.id, batch) : ''}
        </output>
      </p>
    </section>
  )
}

/** "<id>: pending", "<id>: confirmed <hash> <hash>", "<id>: failed …": what the wallet says of the batch. */
function describeBatch(id: string, batch: ReturnType<typeof useWaitForCallsStatus>): string {
  if (batch.error) return `${id}: unknown (${batch.error.shortMessage})`
  if (!batch.data) return `${id}: pending`
  const hashes = batch.data.receipts?.map((receipt) => receipt.transactionHash).join(' ') ?? ''
  const status = batch.data.status === 'success' ? 'confirmed' : batch.data.status === 'failure' ? 'failed' : 'pending'
  return `${id}: ${status}${hashes ? ` ${hashes}` : ''}`
}
