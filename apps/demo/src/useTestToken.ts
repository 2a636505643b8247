import { getPublicClient, type Hex, NotConnectedError, toProviderError, waitForTransactionReceipt } from '@latchkey/core'
import { useAccount, useClient, useSendTransaction } from '@latchkey/react'
import { useCallback, useEffect, useState } from 'react'
import { erc20Abi, formatUnits, parseEther, toHex } from 'viem'
import {
  approveUnlimitedData,
  FAUCET,
  GRANT_ALLOWANCE,
  GRANT_LIFETIME_SECONDS,
  grantRequest,
  MINT_AMOUNT,
  mintData,
  SEND_AMOUNT,
  TEST_ACCOUNT,
  TOKEN,
  TOKEN_DECIMALS,
  TOKEN_SYMBOL,
  transferData,
} from './testToken.js'

/** "98.5 TKN". */
export const formatTkn = (amount: bigint) => `${formatUnits(amount, TOKEN_DECIMALS)} ${TOKEN_SYMBOL}`

/**
 * Below this the account cannot pay a token transfer's gas, so "Send tokens" and "Approve
 * unlimited" (paid in ETH) add test ETH first. "Get test tokens" never does: a user who pays gas in
 * TKN (the Batch card's "Pay gas in TKN") keeps holding no ETH at all.
 */
const GAS_FLOOR = parseEther('0.01')

/** The connected account's TKN, or why it could not be read (no token on this chain, say). */
export type TokenBalance = { amount: bigint } | { error: string }

/** The balance as the demo shows it: "100 TKN", nothing while it loads, or why it could not be read. */
export function describeBalance(balance: TokenBalance | undefined): string {
  if (!balance) return ''
  return 'amount' in balance ? formatTkn(balance.amount) : `unavailable: ${balance.error}`
}

export type TokenAction = 'mint' | 'send' | 'approve' | 'grant'

/**
 * The demo's Test Token for the connected account: its balance, and the actions behind the four
 * token buttons. Each action resolves with the line it also keeps in `status`, or rejects with
 * Latchkey's typed error (`UserRejectedRequestError` when the user rejects, the wallet's refusal
 * otherwise) for the caller to show. Every wallet can mint, send and approve; "Grant permission"
 * needs one that speaks ERC-7715 (`wallet_grantPermissions`), as the embedded wallet does.
 *
 * @example
 * const token = useTestToken()
 * await token.send() // 'Sent 1.5 TKN to 0xa0Ee… (block 12)'
 */
export function useTestToken() {
  const client = useClient()
  const { address, chainId, connector } = useAccount()
  const { sendTransaction } = useSendTransaction()
  const [balance, setBalance] = useState<TokenBalance>()
  const [status, setStatus] = useState('')
  const [hash, setHash] = useState<Hex>()
  const [pending, setPending] = useState<TokenAction>()

  const refresh = useCallback(async () => {
    if (!address) return setBalance(undefined)
    try {
      const amount = await getPublicClient(client, { chainId }).readContract({ address: TOKEN, abi: erc20Abi, functionName: 'balanceOf', args: [address] })
      setBalance({ amount })
    } catch (error) {
      setBalance({ error: (error as Error).message.split('\n')[0] ?? 'unknown error' })
    }
  }, [client, address, chainId])

  useEffect(() => {
    void refresh()
  }, [refresh])

  /** Runs one action: its button shows pending, its line becomes the status; a failure clears the status and is rethrown as is. */
  async function act(action: TokenAction, work: (account: `0x${string}`) => Promise<string>): Promise<string> {
    if (!address) throw new NotConnectedError()
    setPending(action)
    setStatus('')
    try {
      const line = await work(address)
      setStatus(line)
      return line
    } catch (error) {
      setStatus('')
      throw error
    } finally {
      setPending(undefined)
    }
  }

  /** Waits for the transaction's block, reads the balance again, and says how it ended. */
  async function settle(sent: Hex, done: string): Promise<string> {
    setHash(sent)
    setStatus('Waiting for the block…')
    const receipt = await waitForTransactionReceipt(client, { hash: sent, chainId })
    await refresh()
    return receipt.status === 'success' ? `${done} (block ${receipt.blockNumber})` : `Reverted in block ${receipt.blockNumber}`
  }

  /** The dev chain's faucet: anvil signs the open `mint` from its unlocked FAUCET account, so the user is asked nothing. */
  const mint = () =>
    act('mint', async (account) => {
      const chain = getPublicClient(client, { chainId })
      try {
        const minted = (await chain.request({ method: 'eth_sendTransaction', params: [{ from: FAUCET, to: TOKEN, data: mintData(account) }] } as never)) as Hex
        return await settle(minted, `Minted ${formatTkn(MINT_AMOUNT)} to you`)
      } catch (error) {
        throw toProviderError(error)
      }
    })

  /** The dev chain's faucet for gas: an account below {@link GAS_FLOOR} gets 10 test ETH before it pays for a transaction. */
  async function withGas(account: `0x${string}`) {
    const chain = getPublicClient(client, { chainId })
    try {
      if ((await chain.getBalance({ address: account })) < GAS_FLOOR)
        await chain.request({ method: 'anvil_setBalance', params: [account, toHex(parseEther('10'))] } as never)
    } catch (error) {
      throw toProviderError(error)
    }
  }

  const send = () =>
    act('send', async (account) => {
      await withGas(account)
      return settle(await sendTransaction({ to: TOKEN, data: transferData() }), `Sent ${formatTkn(SEND_AMOUNT)} to ${TEST_ACCOUNT}`)
    })

  const approveUnlimited = () =>
    act('approve', async (account) => {
      await withGas(account)
      return settle(await sendTransaction({ to: TOKEN, data: approveUnlimitedData() }), `Approved ${TEST_ACCOUNT} to spend unlimited ${TOKEN_SYMBOL}`)
    })

  /** ERC-7715 through the connected wallet's EIP-1193 provider: no Latchkey action wraps it, so its errors are typed here. */
  const grantPermission = () =>
    act('grant', async (account) => {
      if (!connector) throw new NotConnectedError()
      const provider = await connector.getProvider()
      const now = Date.now()
      let answer: unknown
      try {
        answer = await provider.request({ method: 'wallet_grantPermissions', params: [grantRequest({ account, chainId, now })] } as never)
      } catch (error) {
        throw toProviderError(error)
      }
      const granted = (Array.isArray(answer) ? answer[0] : answer) as { context?: unknown } | undefined
      const until = new Date(now + GRANT_LIFETIME_SECONDS * 1000).toISOString().slice(11, 16)
      const context = typeof granted?.context === 'string' ? ` (grant ${granted.context})` : ''
      return `Granted: up to ${formatTkn(GRANT_ALLOWANCE)} a day without asking, until ${until} UTC${context}`
    })

  return { balance, status, hash, pending, refresh, mint, send, approveUnlimited, grantPermission }
}
