/**
 * The batch executor embedded accounts delegate to (EIP-7702): contracts/BatchExecutor.sol,
 * deployed with CREATE2 through the deterministic deployment proxy with salt 0, so it has this
 * address on every chain that carries the proxy (anvil does; `npm start` deploys it on both local
 * chains). contracts/BatchExecutor.test.ts checks it against the checked-in bytecode.
 *
 * @example
 * createEmbeddedWallet({ appName, backendUrl, chains, batchExecutor: BATCH_EXECUTOR_ADDRESS })
 */
export const BATCH_EXECUTOR_ADDRESS = '0x8BC80c51862f2FEF134e38084d19cBddd5A89742' as const

export { BATCH_MODE } from '@latchkey/constants/batch-executor'
