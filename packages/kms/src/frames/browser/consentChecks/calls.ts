import { BATCH_CALLS_PARAMETERS, BATCH_EXECUTOR_ABI, BATCH_MODE } from '@latchkey/constants/batch-executor'
import { encodeAbiParameters, encodeFunctionData, type Hex } from 'viem'
import { type Call, toCall } from '../review/calls.js'
import { formatNetwork, sameAddress, toAddress, toQuantity } from '../review/format.js'
import { type Activity, isObject, type PayloadFacts, type PayloadSettings, unbound } from './activity.js'
import { assertSameCall, feeRow, unsignedTransaction } from './transaction.js'

// wallet_sendCalls: one transaction from the account to itself, whose calldata is the batch
// executor's `execute(BATCH_MODE, abi.encode(calls))` of exactly the requested calls (as
// packages/embedded/src/smartAccount.ts builds it). The account runs the executor's code once it
// delegates to it, so an authorization in the same transaction may name the executor only.

const ZERO_ADDRESS = '0x0000000000000000000000000000000000000000'

/** The calldata of `execute(BATCH_MODE, abi.encode(calls))`. */
export function executeData(calls: readonly Call[]): Hex {
  const encoded = encodeAbiParameters(BATCH_CALLS_PARAMETERS, [calls.map((call) => ({ to: call.to ?? ZERO_ADDRESS, value: call.value, data: call.data }))])
  return encodeFunctionData({ abi: BATCH_EXECUTOR_ABI, functionName: 'execute', args: [BATCH_MODE, encoded] })
}

export function checkCalls(
  activity: Activity,
  params: readonly unknown[],
  context: { account: `0x${string}`; chainId: number },
  settings: PayloadSettings,
): PayloadFacts {
  if (!settings.executor) throw unbound('this frame has no batch executor configured, so it cannot sign a batch of calls')
  const { transaction } = unsignedTransaction(activity, context, settings)
  const batch = params[0]
  if (!isObject(batch) || !Array.isArray(batch.calls) || batch.calls.length === 0) throw unbound('the requested batch has no calls')
  if (batch.from !== undefined && batch.from !== null && !sameAddress(toAddress(batch.from) ?? '', context.account))
    throw unbound(`the requested batch is from ${String(batch.from)}, not from the account ${context.account}`)
  if (toQuantity(batch.chainId) !== BigInt(context.chainId))
    throw unbound(`the requested batch is for chain ${String(batch.chainId)}, but the wallet is on ${formatNetwork(context.chainId)}`)
  let calls: Call[]
  try {
    calls = batch.calls.map((call, index) => toCall(call, unbound, `Call ${index + 1}`))
  } catch (error) {
    throw unbound(`the requested batch is malformed: ${(error as Error).message}`)
  }
  // The calls' values are paid from the account's balance by the executor: the transaction carries none.
  assertSameCall(transaction, { to: context.account, value: 0n, data: executeData(calls) }, 'the payload does not send the requested calls')
  const fee = feeRow(transaction)
  return { rows: fee ? [fee] : [] }
}
