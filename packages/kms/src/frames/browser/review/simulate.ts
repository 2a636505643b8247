import { type AbiParameter, decodeAbiParameters, getAddress, type Hex, numberToHex, size, slice } from 'viem'
import type { Call } from './calls.js'
import { formatNative, formatNetwork } from './format.js'
import { formatTokenAmount, readSymbol, readToken } from './tokens.js'
import type { ReviewContext, SimulationResult } from './types.js'

// What the request would move, from the chain itself: eth_simulateV1 runs the calls from the
// account on top of the latest block, and `traceTransfers` makes native transfers show up as
// Transfer logs of 0xeeee…eeee, beside the tokens' own events. The account's net change per asset
// becomes a sentence. No chain or an RPC error says so: never a silent "nothing".

const TRANSFER = '0xddf252ad1be2c89b69c2b068fc378daa952ba7f163c4a11628f55a4df523b3ef'
const TRANSFER_SINGLE = '0xc3d58168c5ae7397731d063d5bbf3d657854427343f4c083240f7aacaa2d0f62'
const TRANSFER_BATCH = '0x4a39dc06d4c0dbc64b70af90fd698a233a518aa5d07e595d983b8c0526c8f7fb'
/** The pseudo-address eth_simulateV1 logs native transfers from (ERC-7528). */
const NATIVE = '0xeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeee'

/** Errors a revert is read as, by selector: Solidity's own and the standard tokens' (OpenZeppelin 5). */
const ERRORS: Readonly<Record<string, { readonly name: string; readonly types: readonly AbiParameter[] }>> = {
  '0x08c379a0': { name: 'Error', types: [{ type: 'string' }] },
  '0x4e487b71': { name: 'Panic', types: [{ type: 'uint256' }] },
  '0xe450d38c': { name: 'ERC20InsufficientBalance', types: [{ type: 'address' }, { type: 'uint256' }, { type: 'uint256' }] },
  '0xfb8f41b2': { name: 'ERC20InsufficientAllowance', types: [{ type: 'address' }, { type: 'uint256' }, { type: 'uint256' }] },
}

type Log = { readonly address: string; readonly topics: readonly Hex[]; readonly data: Hex }
type SimulatedCall = { readonly status: Hex; readonly returnData?: Hex; readonly logs?: readonly Log[]; readonly error?: { readonly message?: string } }

/** One asset the account's balance changes in: native, a fungible token, or one NFT/1155 id. */
type Change = { kind: 'native' } | { kind: 'fungible'; token: string } | { kind: 'item'; token: string; id: bigint; fungible: boolean }

/**
 * Simulates `calls` in order from the account and answers the account's asset changes as sentences.
 *
 * @example
 * await simulate(context, [{ to: token, value: 0n, data }]) // { status: 'ok', sends: ['You send 1.5 TKN'], receives: ['You receive nothing'] }
 */
export async function simulate(context: ReviewContext, calls: readonly Call[]): Promise<SimulationResult> {
  if (!context.rpc)
    return { status: 'unavailable', reason: `There is no connection to ${formatNetwork(context.chainId)}: the asset changes cannot be simulated.` }
  let simulated: readonly SimulatedCall[]
  try {
    const blocks = await context.rpc('eth_simulateV1', [
      {
        blockStateCalls: [
          { calls: calls.map((call) => ({ from: context.account, ...(call.to ? { to: call.to } : {}), value: numberToHex(call.value), data: call.data })) },
        ],
        traceTransfers: true,
        validation: false,
      },
      'latest',
    ])
    simulated = (blocks as readonly { calls: readonly SimulatedCall[] }[])[0]?.calls ?? []
    if (simulated.length !== calls.length) throw new Error(`it answered ${simulated.length} results for ${calls.length} calls`)
  } catch (error) {
    return { status: 'unavailable', reason: `The chain could not simulate this request: ${error instanceof Error ? error.message : String(error)}` }
  }
  const failed = simulated.findIndex((call) => call.status !== '0x1')
  if (failed >= 0) {
    const reason = revertReason(simulated[failed]!)
    return { status: 'reverted', reason: calls.length > 1 ? `Call ${failed + 1} reverts: ${reason}` : reason }
  }
  const changes = new Map<string, { change: Change; net: bigint }>()
  const account = context.account.toLowerCase()
  const add = (key: string, change: Change, amount: bigint, from: string, to: string) => {
    const delta = (to === account ? amount : 0n) - (from === account ? amount : 0n)
    if (from !== account && to !== account) return
    const entry = changes.get(key) ?? { change, net: 0n }
    entry.net += delta
    changes.set(key, entry)
  }
  for (const log of simulated.flatMap((call) => call.logs ?? [])) {
    const token = log.address.toLowerCase()
    const topic = (index: number) => log.topics[index]?.toLowerCase() ?? ''
    const party = (index: number) => `0x${topic(index).slice(26)}`
    try {
      if (topic(0) === TRANSFER && log.topics.length === 3) {
        const amount = BigInt(log.data)
        if (token === NATIVE) add('native', { kind: 'native' }, amount, party(1), party(2))
        else add(token, { kind: 'fungible', token: getAddress(token) }, amount, party(1), party(2))
      } else if (topic(0) === TRANSFER && log.topics.length === 4) {
        const id = BigInt(topic(3))
        add(`${token}#${id}`, { kind: 'item', token: getAddress(token), id, fungible: false }, 1n, party(1), party(2))
      } else if (topic(0) === TRANSFER_SINGLE) {
        const [id, amount] = decodeAbiParameters([{ type: 'uint256' }, { type: 'uint256' }], log.data)
        add(`${token}#${id}`, { kind: 'item', token: getAddress(token), id, fungible: true }, amount, party(2), party(3))
      } else if (topic(0) === TRANSFER_BATCH) {
        const [ids, amounts] = decodeAbiParameters([{ type: 'uint256[]' }, { type: 'uint256[]' }], log.data)
        for (const [index, id] of ids.entries())
          add(`${token}#${id}`, { kind: 'item', token: getAddress(token), id, fungible: true }, amounts[index] ?? 0n, party(2), party(3))
      }
    } catch {
      // A log that only looks like a transfer (wrong data length) moves nothing we can name.
    }
  }
  const sends: string[] = []
  const receives: string[] = []
  for (const { change, net } of changes.values()) {
    if (net === 0n) continue
    const text = await describeChange(context, change, net < 0n ? -net : net)
    ;(net < 0n ? sends : receives).push(net < 0n ? `You send ${text}` : `You receive ${text}`)
  }
  return { status: 'ok', sends: sends.length ? sends : ['You send nothing'], receives: receives.length ? receives : ['You receive nothing'] }
}

async function describeChange(context: ReviewContext, change: Change, amount: bigint): Promise<string> {
  if (change.kind === 'native') return formatNative(amount)
  if (change.kind === 'fungible') return formatTokenAmount(amount, change.token, await readToken(context, change.token)).text
  const symbol = await readSymbol(context, change.token)
  const collection = symbol ? `${symbol} (${change.token})` : change.token
  return change.fungible ? `${amount} of token #${change.id} of ${collection}` : `NFT #${change.id} of ${collection}`
}

function revertReason(call: SimulatedCall): string {
  const data = call.returnData
  if (data && data !== '0x') {
    const error = size(data) >= 4 ? ERRORS[slice(data, 0, 4).toLowerCase()] : undefined
    try {
      if (!error) throw new Error('unknown error')
      const args = decodeAbiParameters(error.types, slice(data, 4))
      if (error.name === 'Error') return String(args[0])
      if (error.name === 'Panic') return `panic ${numberToHex(args[0] as bigint)}`
      return `${error.name}(${args.map(String).join(', ')})`
    } catch {
      return `${call.error?.message ?? 'execution reverted'} (${data})`
    }
  }
  // No revert data: the node's own words ("execution failed") say nothing more than this.
  return 'the contract reverted without a reason'
}
