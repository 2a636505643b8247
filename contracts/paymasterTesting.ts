import { mkdtemp } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { type BaseError, type Chain, createPublicClient, defineChain, type Hex, http, type PublicClient, type Transport } from 'viem'
import {
  type BundlerClient,
  createBundlerClient,
  entryPoint08Abi,
  entryPoint08Address,
  toPackedUserOperation,
  type UserOperation,
} from 'viem/account-abstraction'
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'
import { getFreePort, loadPaymasters, type Stack, type StackPaymasters, startStack } from '../packages/devnet/src/index.js'

// Shared by SponsorPaymaster.test.ts and TokenPaymaster.test.ts: the local stack's chain A and its
// Alto bundler, with both paymasters deployed and funded as `npm start` does, and the EntryPoint's
// own verdict on a UserOperation (handleOps simulated, so its FailedOp reason shows).

export type PaymasterStack = {
  stack: Stack<false>
  keys: StackPaymasters
  chainId: number
  client: PublicClient<Transport, Chain>
  bundler: BundlerClient
}

export async function startPaymasterStack(): Promise<PaymasterStack> {
  const ports = { chainA: await getFreePort(), chainB: await getFreePort(), bundlerA: await getFreePort(), bundlerB: await getFreePort() }
  const stateDir = join(await mkdtemp(join(tmpdir(), 'latchkey-paymaster-')), 'state')
  const stack = await startStack({ ports, stateDir, demo: false, relay: false, kms: false })
  const chainId = 31337
  const chain = defineChain({
    id: chainId,
    name: 'anvil A',
    nativeCurrency: { name: 'Ether', symbol: 'ETH', decimals: 18 },
    rpcUrls: { default: { http: [stack.urls.chainA] } },
  })
  const client = createPublicClient({ chain, transport: http(), pollingInterval: 50 })
  const bundler = createBundlerClient({ client, transport: http(stack.bundlers![chainId]), pollingInterval: 50 })
  return { stack, keys: await loadPaymasters(stateDir), chainId, client, bundler }
}

/** The reason in the EntryPoint's `FailedOp(opIndex, reason)` when it would refuse `userOperation`, else `undefined`. */
export async function entryPointVerdict(client: PublicClient, userOperation: UserOperation<'0.8'>): Promise<string | undefined> {
  const beneficiary = privateKeyToAccount(generatePrivateKey()).address
  const error = await client
    .simulateContract({
      account: beneficiary,
      address: entryPoint08Address,
      abi: entryPoint08Abi,
      functionName: 'handleOps',
      args: [[toPackedUserOperation(userOperation)], beneficiary],
      // The bundler's transaction carries a first operation's EIP-7702 delegation: so does the simulation.
      ...(userOperation.authorization ? { authorizationList: [userOperation.authorization] } : {}),
    })
    .then(
      () => undefined,
      (caught: unknown) => caught,
    )
  if (error === undefined) return undefined
  const reverted = (error as BaseError).walk((cause) => (cause as { name?: string }).name === 'ContractFunctionRevertedError') as {
    data?: { errorName: string; args?: readonly unknown[] }
  } | null
  const data = reverted?.data
  return data ? `${data.errorName}: ${data.args?.slice(1).join(', ')}` : (error as Error).message
}

/** The EntryPoint deposit of `address`. */
export const depositOf = (client: PublicClient, address: Hex) =>
  client.readContract({ address: entryPoint08Address, abi: entryPoint08Abi, functionName: 'balanceOf', args: [address] })
