import { encodeAbiParameters, encodeFunctionData, type Hex, type PublicClient } from 'viem'
import { entryPoint08Abi, entryPoint08Address, getUserOperationTypedData, type SmartAccount, toSmartAccount } from 'viem/account-abstraction'
import type { PrivateKeyAccount } from 'viem/accounts'
import { batchExecutorAddress, batchExecutorArtifact } from '../../../contracts/index.js'

// Test helper shared by packages/devnet/test/userOperation.test.ts and the paymasters' tests in
// contracts/: an embedded account (an EOA delegated to the batch executor) as a viem smart account.

/** ERC-7821's batch mode without opData, the one the executor supports. */
export const BATCH_MODE: Hex = '0x0100000000000000000000000000000000000000000000000000000000000000'
const EXECUTIONS = [
  {
    type: 'tuple[]',
    components: [
      { name: 'target', type: 'address' },
      { name: 'value', type: 'uint256' },
      { name: 'callData', type: 'bytes' },
    ],
  },
] as const

/**
 * The executor as a viem smart account: the EOA's own address, ERC-7821 batches as call data, the
 * EOA's key signing the UserOperation's EIP-712 hash (what OpenZeppelin's Account and
 * SignerEIP7702 check), and `factory: 0x7702` with the delegation as the EntryPoint v0.8 expects.
 */
export function toBatchExecutorAccount(client: PublicClient, owner: PrivateKeyAccount): Promise<SmartAccount> {
  const entryPoint = { abi: entryPoint08Abi, address: entryPoint08Address, version: '0.8' } as const
  return toSmartAccount({
    client,
    entryPoint,
    authorization: { account: owner, address: batchExecutorAddress },
    getAddress: async () => owner.address,
    getFactoryArgs: async () => ({ factory: '0x7702', factoryData: '0x' }),
    encodeCalls: async (calls) =>
      encodeFunctionData({
        abi: batchExecutorArtifact.abi,
        functionName: 'execute',
        args: [BATCH_MODE, encodeAbiParameters(EXECUTIONS, [calls.map((call) => ({ target: call.to, value: call.value ?? 0n, callData: call.data ?? '0x' }))])],
      }),
    // A well-formed 65-byte signature for gas estimation (recovers to no one, so validation fails softly).
    getStubSignature: async () => `0x${'ff'.repeat(32)}${'7a'.repeat(32)}1c`,
    signMessage: ({ message }) => owner.signMessage({ message }),
    signTypedData: (typedData) => owner.signTypedData(typedData as never),
    async signUserOperation({ chainId = client.chain!.id, ...userOperation }) {
      return owner.signTypedData(
        getUserOperationTypedData({ chainId, entryPointAddress: entryPoint.address, userOperation: { ...userOperation, sender: owner.address } }),
      )
    },
  })
}
