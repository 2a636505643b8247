/**
 * The batch executor's wire (contracts/BatchExecutor.sol, ERC-7821): its `execute` ABI, the call
 * tuples it takes and the one mode it runs. Written once here because three parties must agree on
 * them byte for byte: the embedded wallet builds a batch with them, the consent frame checks the
 * batch it shows is the one it stamps, and the kms reads a grant's spend out of it. Plain data,
 * no dependencies: each side encodes with its own viem.
 *
 * @example
 * import { BATCH_CALLS_PARAMETERS, BATCH_EXECUTOR_ABI, BATCH_MODE } from '@latchkey/constants/batch-executor'
 * encodeFunctionData({ abi: BATCH_EXECUTOR_ABI, functionName: 'execute', args: [BATCH_MODE, encodeAbiParameters(BATCH_CALLS_PARAMETERS, [calls])] })
 */

/** ERC-7821 batch mode (call type 0x01, revert on failure, no opData): the one mode the executor runs. */
export const BATCH_MODE = '0x0100000000000000000000000000000000000000000000000000000000000000' as const

/** `execute(bytes32 mode, bytes executionData)`, the executor's entry point. */
export const BATCH_EXECUTOR_ABI = [
  {
    type: 'function',
    name: 'execute',
    stateMutability: 'payable',
    inputs: [
      { name: 'mode', type: 'bytes32' },
      { name: 'executionData', type: 'bytes' },
    ],
    outputs: [],
  },
] as const

/** `executionData` in batch mode: `abi.encode(Call[])`, each call `(address to, uint256 value, bytes data)`. */
export const BATCH_CALLS_PARAMETERS = [
  {
    type: 'tuple[]',
    components: [
      { name: 'to', type: 'address' },
      { name: 'value', type: 'uint256' },
      { name: 'data', type: 'bytes' },
    ],
  },
] as const
