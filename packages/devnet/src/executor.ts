import { createPublicClient, createWalletClient, type Hex, http, keccak256, toHex } from 'viem'
import { privateKeyToAccount } from 'viem/accounts'
import { BATCH_EXECUTOR_SALT, batchExecutorAddress, batchExecutorArtifact, batchExecutorDeployData, CREATE2_FACTORY } from '../../../contracts/index.js'
import { DevnetError } from './instance.js'

/** The executor's address on the local chains (the same on every chain with the CREATE2 factory). */
export const BATCH_EXECUTOR_ADDRESS = batchExecutorAddress

// A throwaway key that pays for the deployment, funded by anvil itself: the test accounts keep
// their nonces and balances. Anyone may send the factory call; the address does not depend on it.
const DEPLOYER_KEY: Hex = keccak256(toHex('latchkey devnet batch executor deployer'))

/**
 * Deploys contracts/BatchExecutor.sol on the anvil chain at `rpcUrl` with CREATE2 (salt
 * {@link BATCH_EXECUTOR_SALT}) through the deterministic deployment proxy, unless it is there
 * already; checks that the code at the address is the checked-in runtime bytecode. Answers the address.
 *
 * @example
 * const executor = await deployBatchExecutor('http://127.0.0.1:8545')
 */
export async function deployBatchExecutor(rpcUrl: string): Promise<`0x${string}`> {
  const transport = http(rpcUrl)
  const chain = createPublicClient({ transport })
  const deployed = () => chain.getCode({ address: batchExecutorAddress })
  if ((await deployed()) === batchExecutorArtifact.deployedBytecode) return batchExecutorAddress
  const factory = await chain.getCode({ address: CREATE2_FACTORY })
  if (!factory || factory === '0x')
    throw new DevnetError(`no CREATE2 factory at ${CREATE2_FACTORY} on ${rpcUrl}: start anvil without --disable-default-create2-deployer`, {
      code: 'NO_CREATE2_FACTORY',
    })
  const account = privateKeyToAccount(DEPLOYER_KEY)
  await chain.request({ method: 'anvil_setBalance', params: [account.address, '0xde0b6b3a7640000'] } as never)
  const wallet = createWalletClient({ account, transport, chain: { id: await chain.getChainId() } as never })
  const hash = await wallet.sendTransaction({ to: CREATE2_FACTORY, data: batchExecutorDeployData, chain: null })
  const receipt = await chain.waitForTransactionReceipt({ hash, pollingInterval: 50 })
  const code = await deployed()
  if (receipt.status !== 'success' || code !== batchExecutorArtifact.deployedBytecode)
    throw new DevnetError(`the batch executor deployment on ${rpcUrl} did not leave the expected code at ${batchExecutorAddress}`, {
      code: 'DEPLOY_FAILED',
    })
  return batchExecutorAddress
}
