import { type Hex, numberToHex } from 'viem'
import { en } from '../i18n/en.js'
import type { Call } from './calls.js'
import { formatNative } from './format.js'
import type { ReviewContext, ReviewRow } from './types.js'

// The network fee the user may pay: gas (the transaction's own limit, else eth_estimateGas) times
// the price it offers (maxFeePerGas or gasPrice, else the chain's eth_gasPrice plus
// eth_maxPriorityFeePerGas). A limit the app set reads "up to"; an estimate reads "about".

export type FeeFields = { readonly gas?: bigint | undefined; readonly maxFeePerGas?: bigint | undefined; readonly gasPrice?: bigint | undefined }

const quantity = (value: unknown): bigint => {
  if (typeof value !== 'string' || !/^0x[0-9a-fA-F]+$/.test(value)) throw new Error(`the chain answered ${String(value)}, not a quantity`)
  return BigInt(value)
}
const message = (error: unknown) => (error instanceof Error ? error.message : String(error))

/**
 * The "Network fee" row of a transaction.
 *
 * @example
 * await feeRow(context, call, { gas: 21000n, maxFeePerGas: 2000000000n }) // { label: 'Network fee', value: 'up to 0.000042 ETH' }
 */
export async function feeRow(context: ReviewContext, call: Call, fields: FeeFields): Promise<ReviewRow> {
  const label = en.rowNetworkFee
  const { rpc } = context
  const price = fields.maxFeePerGas ?? fields.gasPrice
  if (!rpc && (fields.gas === undefined || price === undefined)) return { label, value: 'unknown (no connection to the chain)', tone: 'warning' }
  let gas = fields.gas
  if (gas === undefined && rpc) {
    try {
      const request: Record<string, Hex> = { from: context.account, value: numberToHex(call.value), data: call.data }
      if (call.to) request.to = call.to
      gas = quantity(await rpc('eth_estimateGas', [request]))
    } catch (error) {
      return { label, value: `cannot be estimated: ${message(error)}`, tone: 'warning' }
    }
  }
  let perGas = price
  if (perGas === undefined && rpc) {
    try {
      const base = quantity(await rpc('eth_gasPrice', []))
      const tip = await rpc('eth_maxPriorityFeePerGas', []).then(quantity, () => 0n)
      perGas = base + tip
    } catch (error) {
      return { label, value: `cannot be estimated: ${message(error)}`, tone: 'warning' }
    }
  }
  const total = (gas ?? 0n) * (perGas ?? 0n)
  return { label, value: fields.gas !== undefined && price !== undefined ? `up to ${formatNative(total)}` : `about ${formatNative(total)}` }
}
