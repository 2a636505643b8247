import { parseEther } from 'viem'
import { privateKeyToAddress } from 'viem/accounts'
import { describe, expect, test } from 'vitest'
import { anvilKeys } from '../../../../test/chains.js'
import { setupClient } from '../../../../test/setup.js'
import { UnknownProviderError, UserRejectedRequestError } from '../errors/rpc.js'
import { connect } from './connect.js'
import { getBalance } from './getBalance.js'
import { sendTransaction } from './sendTransaction.js'
import { switchChain } from './switchChain.js'
import { waitForTransactionReceipt } from './waitForTransactionReceipt.js'

const key = anvilKeys[4]
const from = privateKeyToAddress(key)
const to = privateKeyToAddress(anvilKeys[9])

describe('sendTransaction', () => {
  test('default: a transfer mined with a successful receipt on the current chain', async () => {
    const { client } = setupClient({ privateKey: key })
    await connect(client, { connector: 'dev' })
    const before = await getBalance(client, { address: to })
    const hash = await sendTransaction(client, { to, value: parseEther('0.001') })
    const receipt = await waitForTransactionReceipt(client, { hash })
    expect(receipt).toMatchObject({ status: 'success', from: from.toLowerCase(), to: to.toLowerCase() })
    const after = await getBalance(client, { address: to })
    expect(after.value - before.value).toBe(parseEther('0.001'))
    expect(after.symbol).toBe('ETH')
  })

  test('behavior: after a switch the transaction lands on the second chain', async () => {
    const { client } = setupClient({ privateKey: key })
    await connect(client, { connector: 'dev' })
    await switchChain(client, { chainId: 31338 })
    const hash = await sendTransaction(client, { to, value: 1n })
    const receipt = await waitForTransactionReceipt(client, { hash, chainId: 31338 })
    expect(receipt.status).toBe('success')
  })

  test('error: rejected in the wallet', async () => {
    let allow = true
    const { client } = setupClient({ privateKey: key, decide: async () => allow })
    await connect(client, { connector: 'dev' })
    allow = false
    await expect(sendTransaction(client, { to, value: 1n })).rejects.toThrow(UserRejectedRequestError)
    expect(client.getState().status).toBe('connected')
  })

  test('error: the chain refuses (more than the balance): the wallet reason is kept', async () => {
    const { client, logger } = setupClient({ privateKey: key })
    await connect(client, { connector: 'dev' })
    const error = await sendTransaction(client, { to, value: parseEther('100000000') }).catch((e: unknown) => e)
    expect(error).toBeInstanceOf(UnknownProviderError)
    expect((error as UnknownProviderError).shortMessage).toMatch(/insufficient funds/i)
    expect(logger.errors).toHaveLength(1)
  })
})
