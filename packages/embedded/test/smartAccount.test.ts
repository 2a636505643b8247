import { ApiKeyStamper } from '@turnkey/api-key-stamper'
import { TurnkeyClient } from '@turnkey/http'
import { createPublicClient, defineChain, type Hex, http, parseEther, verifyMessage } from 'viem'
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'
import { describe, expect, inject, test } from 'vitest'
import { BATCH_EXECUTOR_ADDRESS, CannotProceedError, createEmbeddedProvider, createEmbeddedWallet, InvalidAuthorizationError } from '../src/index.js'
import { memoryKeys, memoryStorage, useEmbeddedStack } from './harness.js'

// EIP-7702 smart accounts and EIP-5792 batches of the embedded wallet, against a real kms and
// backend and the unit run's two anvil chains, where test/globalSetup.ts deployed the executor.

const stack = useEmbeddedStack()
const chainA = stack.chain
const chainB = defineChain({
  id: 31338,
  name: 'Anvil B',
  nativeCurrency: { name: 'Ether', symbol: 'ETH', decimals: 18 },
  rpcUrls: { default: { http: [inject('chainBRpc')] } },
})
const rpc = { 31337: createPublicClient({ chain: chainA, transport: http() }), 31338: createPublicClient({ chain: chainB, transport: http() }) }
const DELEGATED_CODE = `0xef0100${BATCH_EXECUTOR_ADDRESS.slice(2).toLowerCase()}`
let people = 0

/** A signed-in wallet on both chains with 1 ETH on each, and its EIP-1193 provider. */
async function signedIn(options: { batchExecutor?: null } = {}) {
  const browser = stack.browserFetch()
  const wallet = createEmbeddedWallet({
    appName: 'Embedded test',
    backendUrl: stack.backendUrl,
    kmsUrl: stack.kms.url,
    organizationId: stack.organizationId,
    chains: [chainA, chainB],
    storage: memoryStorage(),
    testOnlySessionKeys: memoryKeys(),
    now: stack.now,
    fetch: browser.fetchFn,
    ...options,
  })
  const email = `smart${++people}.${stack.clock}@example.test`
  const sent = await wallet.startEmail(email)
  await wallet.verifyEmail(sent)
  const address = wallet.current!.credential.address
  for (const client of Object.values(rpc)) await client.request({ method: 'anvil_setBalance' as never, params: [address, '0xDE0B6B3A7640000'] as never })
  return { wallet, address, provider: createEmbeddedProvider(wallet, [chainA, chainB]), organizationId: wallet.current!.organizationId }
}

const recipients = () => [privateKeyToAccount(generatePrivateKey()).address, privateKeyToAccount(generatePrivateKey()).address] as const
const twoTransfers = (to: readonly Hex[]) => to.map((address) => ({ to: address, value: '0x38d7ea4c68000' as Hex, data: '0x' as Hex }))
const balancesOf = (chainId: 31337 | 31338, addresses: readonly Hex[]) => Promise.all(addresses.map((address) => rpc[chainId].getBalance({ address })))

/** The sub-organization's activities, read with the parent organization's key: what the kms wrote. */
async function activitiesOf(organizationId: string) {
  const parent = new TurnkeyClient({ baseUrl: stack.kms.url }, new ApiKeyStamper(stack.parentKey))
  return (await parent.getActivities({ organizationId })).activities.map((activity) => activity.id)
}

/** Waits for a batch to be mined: getCallsStatus leaves 100 once anvil has mined the block. */
async function mined(provider: ReturnType<typeof createEmbeddedProvider>, id: string) {
  for (;;) {
    const status = (await provider.request({ method: 'wallet_getCallsStatus', params: [id] })) as { status: number }
    if (status.status !== 100) return status as { status: number; atomic: boolean; chainId: Hex; receipts: { transactionHash: Hex; status: Hex }[] }
    await rpc[31337].request({ method: 'evm_mine' as never })
  }
}

describe('capabilities and the first batch', () => {
  test('default: a new account is "ready"; its first wallet_sendCalls upgrades it and runs both transfers in one transaction', async () => {
    const { wallet, address, provider } = await signedIn()
    expect(wallet.current!.credential).toMatchObject({ walletProperties: { isSessionKeyCompatible: true } })
    expect(wallet.current!.credential.smartWalletRefAddress).toBeUndefined()
    expect(await provider.request({ method: 'wallet_getCapabilities', params: [address] })).toEqual({
      '0x7a69': { atomic: { status: 'ready' } },
      '0x7a6a': { atomic: { status: 'ready' } },
    })

    const to = recipients()
    const { id } = (await provider.request({
      method: 'wallet_sendCalls',
      params: [{ version: '2.0.0', from: address, chainId: '0x7a69', atomicRequired: true, calls: twoTransfers(to) }],
    })) as { id: string }
    const status = await mined(provider, id)
    expect(status).toMatchObject({ status: 200, atomic: true, chainId: '0x7a69' })
    expect(status.receipts).toHaveLength(1)
    const hash = status.receipts[0]!.transactionHash
    const transaction = await rpc[31337].getTransaction({ hash })
    // One type-4 transaction from the account to itself, carrying the authorization for chain A.
    expect(transaction).toMatchObject({ type: 'eip7702', from: address.toLowerCase(), to: address.toLowerCase() })
    expect(transaction.authorizationList).toMatchObject([{ address: BATCH_EXECUTOR_ADDRESS.toLowerCase(), chainId: 31337 }])
    expect(await balancesOf(31337, to)).toEqual([parseEther('0.001'), parseEther('0.001')])
    expect(await rpc[31337].getCode({ address })).toBe(DELEGATED_CODE)

    expect(await provider.request({ method: 'wallet_getCapabilities', params: [address, ['0x7a69']] })).toEqual({
      '0x7a69': { atomic: { status: 'supported' } },
    })
    expect(wallet.current!.credential).toMatchObject({
      smartWalletRefAddress: address,
      smartWalletRefId: `eip155:31337:${BATCH_EXECUTOR_ADDRESS}`,
    })

    // Upgraded: the next batch is a plain transaction through the executor.
    const again = recipients()
    const next = (await provider.request({
      method: 'wallet_sendCalls',
      params: [{ version: '2.0.0', from: address, chainId: '0x7a69', calls: twoTransfers(again) }],
    })) as {
      id: string
    }
    const nextStatus = await mined(provider, next.id)
    expect((await rpc[31337].getTransaction({ hash: nextStatus.receipts[0]!.transactionHash })).type).toBe('eip1559')
    expect(await balancesOf(31337, again)).toEqual([parseEther('0.001'), parseEther('0.001')])

    // A signature by the account still verifies now that it has code (ERC-1271 through the executor).
    const signature = await wallet.signMessage({ message: 'still me' })
    expect(await verifyMessage({ address, message: 'still me', signature })).toBe(true)
    expect(await rpc[31337].verifyMessage({ address, message: 'still me', signature })).toBe(true)
  })

  test('behavior: upgradeAccount on chain B upgrades there only; the credential follows the current chain', async () => {
    const { wallet, address } = await signedIn()
    wallet.switchChain(31338)
    const upgraded = await wallet.upgradeAccount()
    expect(upgraded).toEqual({
      hash: expect.stringMatching(/^0x[0-9a-f]{64}$/),
      smartWalletRefAddress: address,
      smartWalletRefId: `eip155:31338:${BATCH_EXECUTOR_ADDRESS}`,
    })
    expect(await rpc[31338].getCode({ address })).toBe(DELEGATED_CODE)
    expect(await rpc[31337].getCode({ address })).toBeUndefined()
    expect(wallet.current!.credential.smartWalletRefId).toBe(`eip155:31338:${BATCH_EXECUTOR_ADDRESS}`)
    wallet.switchChain(31337)
    expect(wallet.current!.credential.smartWalletRefAddress).toBeUndefined()
    expect(await wallet.getCapabilities()).toEqual({ '0x7a69': { atomic: { status: 'ready' } }, '0x7a6a': { atomic: { status: 'supported' } } })
  })
})

describe('bad authorizations', () => {
  test.each([
    ['another chain', { chainId: 31338 }, 'The authorization is for chain 31338; the wallet is on chain 31337.'],
    ['every chain (0)', { chainId: 0 }, 'The authorization is for chain 0; the wallet is on chain 31337.'],
    ['another nonce', { nonce: 0 }, "The authorization has nonce 0; the account's next authorization nonce is 1."],
    ['another nonce (ahead)', { nonce: 5 }, "The authorization has nonce 5; the account's next authorization nonce is 1."],
  ])('error: an authorization for %s is refused with "Cannot proceed with your request"; nothing is signed or sent', async (_name, requested, details) => {
    const { wallet, address, organizationId } = await signedIn()
    const before = {
      activities: await activitiesOf(organizationId),
      nonce: await rpc[31337].getTransactionCount({ address }),
      record: JSON.stringify(wallet.current),
    }
    for (const attempt of [() => wallet.signAuthorization(requested), () => wallet.upgradeAccount(requested)]) {
      const error = await attempt().catch((caught: unknown) => caught)
      expect(error).toBeInstanceOf(InvalidAuthorizationError)
      expect(error).toBeInstanceOf(CannotProceedError)
      expect(error).toMatchObject({ shortMessage: 'Cannot proceed with your request', code: 'invalid_authorization', details })
    }
    expect(await activitiesOf(organizationId)).toEqual(before.activities)
    expect(await rpc[31337].getTransactionCount({ address })).toBe(before.nonce)
    expect(await rpc[31337].getCode({ address })).toBeUndefined()
    expect(JSON.stringify(wallet.current)).toBe(before.record)
  })

  test('error: an authorization for a contract other than the executor is refused; nothing is signed', async () => {
    const { wallet, organizationId } = await signedIn()
    const before = await activitiesOf(organizationId)
    await expect(wallet.signAuthorization({ address: '0x4e59b44847b379578588920ca78fbf26c0b4956c' })).rejects.toMatchObject({
      code: 'invalid_authorization',
      details: `The wallet delegates only to its batch executor ${BATCH_EXECUTOR_ADDRESS}, not to 0x4e59b44847b379578588920ca78fbf26c0b4956c.`,
    })
    expect(await activitiesOf(organizationId)).toEqual(before)
  })

  test('default: a good authorization is signed by the account for the current chain and its next nonce + 1', async () => {
    const { wallet, address } = await signedIn()
    const authorization = await wallet.signAuthorization()
    expect(authorization).toMatchObject({ address: BATCH_EXECUTOR_ADDRESS, chainId: 31337, nonce: 1 })
    const { recoverAuthorizationAddress } = await import('viem/utils')
    expect(await recoverAuthorizationAddress({ authorization })).toBe(address)
  })
})

describe('without an executor', () => {
  test('behavior: batchExecutor null reports "unsupported" and sends the calls one transaction each', async () => {
    const { address, provider } = await signedIn({ batchExecutor: null })
    expect(await provider.request({ method: 'wallet_getCapabilities', params: [address, ['0x7a69']] })).toEqual({
      '0x7a69': { atomic: { status: 'unsupported' } },
    })
    const to = recipients()
    const { id } = (await provider.request({
      method: 'wallet_sendCalls',
      params: [{ version: '2.0.0', from: address, chainId: '0x7a69', calls: twoTransfers(to) }],
    })) as {
      id: string
    }
    const status = await mined(provider, id)
    expect(status).toMatchObject({ status: 200, atomic: false })
    expect(status.receipts).toHaveLength(2)
    expect(await balancesOf(31337, to)).toEqual([parseEther('0.001'), parseEther('0.001')])
    expect(await rpc[31337].getCode({ address })).toBeUndefined()
  })

  test('error: atomicRequired without an executor is 5760 and nothing is sent', async () => {
    const { address, provider } = await signedIn({ batchExecutor: null })
    const nonce = await rpc[31337].getTransactionCount({ address })
    await expect(
      provider.request({
        method: 'wallet_sendCalls',
        params: [{ version: '2.0.0', from: address, chainId: '0x7a69', atomicRequired: true, calls: twoTransfers(recipients()) }],
      }),
    ).rejects.toMatchObject({ code: 5760 })
    expect(await rpc[31337].getTransactionCount({ address })).toBe(nonce)
  })
})

describe('bad requests', () => {
  test('error: a non-optional capability the wallet lacks is 5700 and nothing is sent', async () => {
    const { address, provider } = await signedIn()
    const nonce = await rpc[31337].getTransactionCount({ address })
    await expect(
      provider.request({
        method: 'wallet_sendCalls',
        params: [
          { version: '2.0.0', from: address, chainId: '0x7a69', calls: twoTransfers(recipients()), capabilities: { auxiliaryFunds: { supported: true } } },
        ],
      }),
    ).rejects.toMatchObject({ code: 5700 })
    expect(await rpc[31337].getTransactionCount({ address })).toBe(nonce)
  })

  test('error: wallet_getCallsStatus of an id this wallet did not issue is 5730', async () => {
    const { provider } = await signedIn()
    for (const id of ['0x1234', `0x${'00'.repeat(31)}017a69${'ab'.repeat(32)}`, `0x${'00'.repeat(30)}7a6901${'ab'.repeat(32)}`])
      await expect(provider.request({ method: 'wallet_getCallsStatus', params: [id] })).rejects.toMatchObject({ code: 5730 })
  })

  test('error: another account in wallet_sendCalls is refused', async () => {
    const { provider } = await signedIn()
    await expect(
      provider.request({
        method: 'wallet_sendCalls',
        params: [{ version: '2.0.0', from: privateKeyToAccount(generatePrivateKey()).address, chainId: '0x7a69', calls: twoTransfers(recipients()) }],
      }),
    ).rejects.toMatchObject({ shortMessage: 'Account not found' })
  })
})
