import { BATCH_CALLS_PARAMETERS, BATCH_EXECUTOR_ABI, BATCH_MODE } from '@latchkey/constants/batch-executor'
import { encodeAbiParameters, encodeFunctionData, parseAbi, parseEther } from 'viem'
import { describe, expect, test } from 'vitest'
import { coveringGrant } from '../src/grants.js'
import type { KmsGrant } from '../src/permissions.js'

// Which grant covers a transaction (src/grants.ts): the one whose scope holds every call, so the
// wallet stamps it with that grant's key and no dialog; anything else goes to the Approve dialog.

const account = '0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266'
const game = '0x5FbDB2315678afecb367f032d93F642f64180aa3'
const token = '0xe7f1725E7734CE288F8367e1Bb143E90bb3F0512'
const recipient = '0x70997970C51812dc3A010C7d01b50e0d17dc79C8'
const NOW = Date.UTC(2030, 0, 1)
const ERC20 = parseAbi(['function transfer(address to, uint256 amount)', 'function balanceOf(address) view returns (uint256)'])
const GAME = parseAbi(['function move(uint256 square)', 'function resign()'])
const grant = (permissions: KmsGrant['permissions'], overrides: Partial<KmsGrant> = {}): KmsGrant => ({
  grantId: 'g',
  publicKey: '02',
  chainId: '31337',
  account: account.toLowerCase(),
  expiry: String(NOW / 1000 + 3600),
  permissions,
  ...overrides,
})
const moves = grant([{ type: 'contract-call', data: { address: game.toLowerCase() as `0x${string}`, calls: ['0x87cb15f7'] } }])
const tokens = grant([
  { type: 'erc20-recurring-allowance', data: { address: token.toLowerCase() as `0x${string}`, allowance: '5', start: '0', period: '86400' } },
])
const native = grant([{ type: 'native-token-recurring-allowance', data: { allowance: '1', start: '0', period: '86400' } }])
const move = encodeFunctionData({ abi: GAME, functionName: 'move', args: [4n] })
const batch = (calls: { to: `0x${string}`; value: bigint; data: `0x${string}` }[]) =>
  encodeFunctionData({ abi: BATCH_EXECUTOR_ABI, functionName: 'execute', args: [BATCH_MODE, encodeAbiParameters(BATCH_CALLS_PARAMETERS, [calls])] })

describe('coveringGrant', () => {
  test('default: a call to a listed contract and selector, an ERC-20 transfer of an allowed token, native value under a native allowance', () => {
    expect(coveringGrant([tokens, moves], { chainId: 31337, to: game, data: move }, account, NOW)).toBe(moves)
    const transfer = encodeFunctionData({ abi: ERC20, functionName: 'transfer', args: [recipient, 1n] })
    expect(coveringGrant([moves, tokens], { chainId: 31337, to: token, data: transfer }, account, NOW)).toBe(tokens)
    expect(coveringGrant([native], { chainId: 31337, to: recipient, value: parseEther('0.1') }, account, NOW)).toBe(native)
    expect(coveringGrant([moves], { chainId: 31337, to: account, data: batch([{ to: game, value: 0n, data: move }]) }, account, NOW)).toBe(moves)
  })

  test('behavior: outside every grant (another selector, contract, chain, account, expired, value without allowance, a delegation) → the dialog', () => {
    const resign = encodeFunctionData({ abi: GAME, functionName: 'resign' })
    const cases = [
      { chainId: 31337, to: game, data: resign },
      { chainId: 31337, to: token, data: move },
      { chainId: 31338, to: game, data: move },
      { chainId: 31337, to: game, data: move, value: 1n },
      {
        chainId: 31337,
        to: account,
        data: batch([
          { to: game, value: 0n, data: move },
          { to: game, value: 0n, data: resign },
        ]),
      },
      { chainId: 31337, to: recipient },
      { chainId: 31337, to: game, data: move, authorizationList: [{ address: game, chainId: 31337, nonce: 0, r: '0x1', s: '0x1', yParity: 0 }] },
    ] as const
    for (const transaction of cases) expect(coveringGrant([moves], transaction as never, account, NOW)).toBeUndefined()
    expect(coveringGrant([moves], { chainId: 31337, to: game, data: move }, recipient, NOW)).toBeUndefined()
    expect(coveringGrant([moves], { chainId: 31337, to: game, data: move }, account, NOW + 3600_000)).toBeUndefined()
  })

  test('behavior: a transaction that pays network fees is covered only by a grant with a native allowance (the kms charges fees to it, and refuses them without one)', () => {
    const transfer = encodeFunctionData({ abi: ERC20, functionName: 'transfer', args: [recipient, 1n] })
    const eip1559 = { chainId: 31337, to: token, data: transfer, type: 'eip1559', gas: 60_000n, maxFeePerGas: 2_000_000_000n } as const
    const legacy = { chainId: 31337, to: token, data: transfer, type: 'legacy', gas: 60_000n, gasPrice: 2_000_000_000n } as const
    const tokensAndFees = grant([...tokens.permissions, ...native.permissions], { grantId: 'fees' })
    for (const transaction of [eip1559, legacy]) {
      expect(coveringGrant([tokens], transaction, account, NOW)).toBeUndefined()
      expect(coveringGrant([tokens, tokensAndFees], transaction, account, NOW)).toBe(tokensAndFees)
    }
    // No fee offered (no gas limit, or no price): nothing to pay.
    expect(coveringGrant([tokens], { ...eip1559, maxFeePerGas: 0n }, account, NOW)).toBe(tokens)
    expect(coveringGrant([tokens], { chainId: 31337, to: token, data: transfer, maxFeePerGas: 2_000_000_000n }, account, NOW)).toBe(tokens)
  })
})
