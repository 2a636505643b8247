import { readFileSync } from 'node:fs'
import { createPublicClient, createWalletClient, http, parseAbi, parseUnits } from 'viem'
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'
import { describe, expect, inject, test } from 'vitest'
import { artifactPath, compileContract, serializeArtifact } from './build.js'
import { testTokenAddress, testTokenArtifact } from './index.js'

// The demo's test token as checked in, rebuilt with the pinned solc and OpenZeppelin; then on the unit
// run's anvil chains, where test/globalSetup.ts deployed it as `npm start` does.

const TOKEN_ABI = parseAbi([
  'function name() view returns (string)',
  'function symbol() view returns (string)',
  'function decimals() view returns (uint8)',
  'function balanceOf(address) view returns (uint256)',
  'function mint(address to, uint256 amount)',
])

describe('build', () => {
  test('default: the checked-in artifact is what the pinned solc builds from TestToken.sol and OpenZeppelin, byte for byte', () => {
    const rebuilt = compileContract('TestToken')
    expect(rebuilt.compiler).toBe('0.8.37+commit.f401782d.Emscripten.clang')
    expect(rebuilt.openzeppelin).toBe('5.7.0')
    expect(serializeArtifact(rebuilt)).toBe(readFileSync(artifactPath('TestToken'), 'utf8'))
  })
})

describe('on chain', () => {
  test('default: "Test Token", TKN, 18 decimals, at the same CREATE2 address on both chains', async () => {
    for (const rpc of [inject('chainARpc'), inject('chainBRpc')]) {
      const chain = createPublicClient({ transport: http(rpc) })
      expect(await chain.getCode({ address: testTokenAddress })).toBe(testTokenArtifact.deployedBytecode)
      const read = <name extends 'name' | 'symbol' | 'decimals'>(functionName: name) =>
        chain.readContract({ address: testTokenAddress, abi: TOKEN_ABI, functionName })
      expect([await read('name'), await read('symbol'), await read('decimals')]).toEqual(['Test Token', 'TKN', 18])
    }
  })

  test('behavior: anyone may mint to anyone (the dev chains\' "Get test tokens")', async () => {
    const transport = http(inject('chainARpc'))
    const chain = createPublicClient({ transport })
    const stranger = privateKeyToAccount(generatePrivateKey())
    const recipient = privateKeyToAccount(generatePrivateKey()).address
    await chain.request({ method: 'anvil_setBalance', params: [stranger.address, '0xde0b6b3a7640000'] } as never)
    const hash = await createWalletClient({ account: stranger, transport }).writeContract({
      address: testTokenAddress,
      abi: TOKEN_ABI,
      functionName: 'mint',
      args: [recipient, parseUnits('2.5', 18)],
      chain: null,
    })
    expect((await chain.waitForTransactionReceipt({ hash, pollingInterval: 50 })).status).toBe('success')
    expect(await chain.readContract({ address: testTokenAddress, abi: TOKEN_ABI, functionName: 'balanceOf', args: [recipient] })).toBe(parseUnits('2.5', 18))
  })
})
