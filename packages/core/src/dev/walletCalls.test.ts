import { describe, expect, test } from 'vitest'
import { createWalletCalls, type RpcReceipt, WalletCallsError } from './walletCalls.js'

// The wallet side's checks and status rules, over a ledger that records what would be sent. The
// sending itself runs for real on anvil in actions/sendCalls.test.ts and in the e2e tests.

const me = '0x70997970C51812dc3A010C7d01b50e0d17dc79C8'
const alice = '0x14dC79964da2C08b23698B3D3cc7Ca32193d9955'

function setup(fail: (index: number) => boolean = () => false) {
  const sent: unknown[] = []
  const receipts = new Map<string, RpcReceipt | null>()
  const calls = createWalletCalls({
    chainIds: [31337, 31338],
    address: () => me,
    async sendTransaction(chainId, call) {
      if (fail(sent.length)) {
        sent.push(null)
        throw new Error('insufficient funds')
      }
      const hash = `0x${(sent.length + 1).toString(16).padStart(64, '0')}` as const
      sent.push({ chainId, ...call })
      receipts.set(hash, null)
      return hash
    },
    getReceipt: async (_chainId, hash) => receipts.get(hash) ?? null,
  })
  const mine = (hash: string, status: '0x1' | '0x0') =>
    receipts.set(hash, { transactionHash: hash as `0x${string}`, blockHash: '0xb', blockNumber: '0x1', gasUsed: '0x5208', status, logs: [] })
  return { calls, sent, mine }
}

const request = (overrides: Record<string, unknown> = {}) => [
  {
    version: '2.0.0',
    chainId: '0x7a69',
    from: me,
    atomicRequired: false,
    calls: [
      { to: alice, value: '0x1' },
      { to: alice, data: '0x' },
    ],
    ...overrides,
  },
]
const hash = (n: number) => `0x${n.toString(16).padStart(64, '0')}`

describe('createWalletCalls', () => {
  test('default: a batch is sent call by call; the status goes pending → confirmed with the receipts', async () => {
    const { calls, sent, mine } = setup()
    const { id } = await calls.send(calls.check(request({ id: 'batch-1' })))
    expect(id).toBe('batch-1')
    expect(sent).toEqual([
      { chainId: 31337, to: alice, value: 1n, data: undefined },
      { chainId: 31337, to: alice, value: undefined, data: '0x' },
    ])
    expect(await calls.getCallsStatus([id])).toEqual({ version: '2.0.0', id, chainId: '0x7a69', status: 100, atomic: false, receipts: [] })
    mine(hash(1), '0x1')
    mine(hash(2), '0x1')
    const done = await calls.getCallsStatus([id])
    expect(done.status).toBe(200)
    expect(done.receipts.map((receipt) => receipt.transactionHash)).toEqual([hash(1), hash(2)])
  })

  test('behavior: reverted receipts are 500, a mix is 600; a call that failed to send stops the rest', async () => {
    const { calls, mine } = setup((index) => index === 1)
    const { id } = await calls.send(calls.check(request({ calls: [{ to: alice }, { to: alice }, { to: alice }] })))
    mine(hash(1), '0x1')
    expect((await calls.getCallsStatus([id])).status).toBe(600)
    const reverted = setup()
    const second = await reverted.calls.send(reverted.calls.check(request()))
    reverted.mine(hash(1), '0x0')
    reverted.mine(hash(2), '0x0')
    expect((await reverted.calls.getCallsStatus([second.id])).status).toBe(500)
  })

  test('behavior: capabilities: atomic unsupported on each chain asked for', () => {
    const { calls } = setup()
    expect(calls.getCapabilities([me])).toEqual({ '0x7a69': { atomic: { status: 'unsupported' } }, '0x7a6a': { atomic: { status: 'unsupported' } } })
    expect(calls.getCapabilities([me, ['0x7a6a', '0x1']])).toEqual({ '0x7a6a': { atomic: { status: 'unsupported' } } })
  })

  test('error: bad requests are refused with their EIP-1193 / EIP-5792 code before anything is sent', async () => {
    const { calls, sent } = setup()
    const refusals: [unknown, number, string][] = [
      [[], -32602, 'wallet_sendCalls expects [{ version, chainId, calls }]'],
      [request({ version: '3' }), -32602, 'Unsupported version "3"'],
      [request({ chainId: '0x1' }), 5710, 'Unsupported chain id 0x1'],
      [request({ from: alice }), 4100, `${alice} is not this wallet's account`],
      [request({ calls: [] }), -32602, 'calls must be a non-empty list'],
      [request({ calls: [{ to: 'bob' }] }), -32602, 'call 0: to is not hex'],
      [request({ calls: [{ to: '0x1234' }] }), -32602, 'call 0: to is not an address'],
      [request({ capabilities: { paymasterService: { url: 'https://pay.example' } } }), 5700, 'Unsupported non-optional capability: paymasterService'],
      [request({ atomicRequired: true }), 5760, 'This wallet cannot run calls atomically'],
      [request({ id: 7 }), -32602, 'id must be a string of at most 4096 bytes'],
    ]
    for (const [params, code, message] of refusals) {
      let error: unknown
      try {
        calls.check(params)
      } catch (e) {
        error = e
      }
      expect(error).toBeInstanceOf(WalletCallsError)
      expect(error).toMatchObject({ code, message })
    }
    expect(() => calls.check(request({ capabilities: { paymasterService: { url: 'x', optional: true } } }))).not.toThrow()
    await calls.send(calls.check(request({ id: 'once' })))
    expect(() => calls.check(request({ id: 'once' }))).toThrow(expect.objectContaining({ code: 5720 }))
    await expect(calls.getCallsStatus(['never-sent'])).rejects.toMatchObject({ code: 5730, message: 'Unknown bundle id never-sent' })
    expect(() => calls.getCapabilities([alice])).toThrow(expect.objectContaining({ code: 4100 }))
    expect(sent).toHaveLength(2)
  })
})
