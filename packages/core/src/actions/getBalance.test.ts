import { createPublicClient, http, parseEther } from 'viem'
import { generatePrivateKey, privateKeyToAddress } from 'viem/accounts'
import { describe, expect, test } from 'vitest'
import { testChains } from '../../../../test/chains.js'
import { createClient } from '../createClient.js'
import { ChainNotConfiguredError } from '../errors/connection.js'
import { createMemoryStorage } from '../storage.js'
import { getBalance } from './getBalance.js'

const chains = testChains()
const client = createClient({ chains, storage: createMemoryStorage() })

/** Gives a fresh address an exact balance on one chain (anvil_setBalance). */
async function fund(chainIndex: 0 | 1, wei: bigint) {
  const address = privateKeyToAddress(generatePrivateKey())
  const chain = chains[chainIndex]
  await createPublicClient({ chain, transport: http(chain.rpcUrls.default.http[0]) }).request({
    method: 'anvil_setBalance' as never,
    params: [address, `0x${wei.toString(16)}`] as never,
  })
  return address
}

describe('getBalance', () => {
  test('default: the current chain, in wei with its native currency', async () => {
    const address = await fund(0, parseEther('1.25'))
    expect(await getBalance(client, { address })).toEqual({ value: 1_250_000_000_000_000_000n, decimals: 18, symbol: 'ETH' })
  })

  test('behavior: another configured chain is read from its own RPC', async () => {
    const address = await fund(1, 7n)
    expect(await getBalance(client, { address, chainId: 31338 })).toEqual({ value: 7n, decimals: 18, symbol: 'ETH' })
    expect(await getBalance(client, { address })).toEqual({ value: 0n, decimals: 18, symbol: 'ETH' })
  })

  test('error: a chain the client does not have', async () => {
    const error = await getBalance(client, { address: privateKeyToAddress(generatePrivateKey()), chainId: 1 }).catch((e: unknown) => e)
    expect(error).toBeInstanceOf(ChainNotConfiguredError)
    expect((error as ChainNotConfiguredError).shortMessage).toMatchInlineSnapshot(`"Chain 1 is not configured."`)
  })
})
