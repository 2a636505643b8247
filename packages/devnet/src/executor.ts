import { batchExecutorAddress, batchExecutorArtifact, batchExecutorDeployData } from '../../../contracts/index.js'
import { deployWithCreate2 } from './create2.js'

/** The executor's address on the local chains (the same on every chain with the CREATE2 factory). */
export const BATCH_EXECUTOR_ADDRESS = batchExecutorAddress

/**
 * Deploys contracts/BatchExecutor.sol on the anvil chain at `rpcUrl` with CREATE2 (salt
 * `BATCH_EXECUTOR_SALT`, zero) through the deterministic deployment proxy, unless it is there
 * already; checks that the code at the address is the checked-in runtime bytecode. Answers the address.
 *
 * @example
 * const executor = await deployBatchExecutor('http://127.0.0.1:8545')
 */
export function deployBatchExecutor(rpcUrl: string): Promise<`0x${string}`> {
  return deployWithCreate2({
    rpcUrl,
    name: 'the batch executor',
    address: batchExecutorAddress,
    deployData: batchExecutorDeployData,
    deployedBytecode: batchExecutorArtifact.deployedBytecode,
  })
}
