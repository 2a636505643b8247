import { BATCH_CALLS_PARAMETERS, BATCH_EXECUTOR_ABI, BATCH_MODE } from '@latchkey/constants/batch-executor'
import { type Address, encodeAbiParameters, encodeFunctionData, type Hex } from 'viem'

/** One call of a batch, as the executor runs it. */
export type BatchCall = { to: Address; value?: bigint | undefined; data?: Hex | undefined }

/**
 * The call data of an embedded account's batch: the executor's ERC-7821 `execute` in batch mode
 * (what a UserOperation's `callData` is, for the paymaster and the bundler). For tests and benches
 * that build operations by hand; the wallet builds its own (embedded's smartAccount.ts).
 *
 * @example
 * executeCallData([{ to: token, data: mintData }])
 */
export function executeCallData(calls: readonly BatchCall[], mode: Hex = BATCH_MODE): Hex {
  const executions = calls.map((call) => ({ to: call.to, value: call.value ?? 0n, data: call.data ?? '0x' }))
  return encodeFunctionData({ abi: BATCH_EXECUTOR_ABI, functionName: 'execute', args: [mode, encodeAbiParameters(BATCH_CALLS_PARAMETERS, [executions])] })
}
