import { type Address, type Hex, isAddress, isAddressEqual, isHex, numberToHex } from 'viem'

/*
 * The wallet side of EIP-5792 (wallet call batches) for an EOA, shared by the dev wallet and the
 * reference wallet: it checks a `wallet_sendCalls` request, sends the calls one by one as plain
 * transactions, and answers `wallet_getCallsStatus` and `wallet_getCapabilities` (v2 shapes).
 * An EOA cannot run calls atomically, and says so: `atomic: { status: 'unsupported' }`.
 */

/** A refusal with the EIP-1193 / EIP-5792 code the dapp receives. */
export class WalletCallsError extends Error {
  override name = 'WalletCallsError'
  constructor(
    readonly code: number,
    message: string,
  ) {
    super(message)
  }
}

/** One call, as the wallet sends it. */
export type WalletCall = { to: Address | undefined; value: bigint | undefined; data: Hex | undefined }

/** A checked `wallet_sendCalls` request, ready to show to the user and to send. */
export type WalletCallsBatch = { id: string; chainId: number; calls: readonly [WalletCall, ...WalletCall[]] }

/** A transaction receipt as the chain's RPC returns it (hex quantities). */
export type RpcReceipt = {
  transactionHash: Hex
  blockHash: Hex
  blockNumber: Hex
  gasUsed: Hex
  status: Hex
  logs: readonly unknown[]
}

export type WalletCallsOptions = {
  /** The chains the wallet sends on. */
  chainIds: readonly number[]
  /** The account in use now. */
  address(): Address
  /** Sends one call from the account on `chainId`; resolves with its hash. */
  sendTransaction(chainId: number, call: WalletCall): Promise<Hex>
  /** The receipt of a hash on `chainId`, or null while it is pending. */
  getReceipt(chainId: number, hash: Hex): Promise<RpcReceipt | null>
  /** Where sent batches are remembered across reloads; default memory only. */
  storage?: { getItem(key: string): string | null; setItem(key: string, value: string): void } | undefined
  /** Default `latchkey.wallet.calls`. */
  storageKey?: string | undefined
}

/** EIP-5792 v2 `wallet_getCallsStatus` result. */
export type WalletCallsStatus = {
  version: '2.0.0'
  id: string
  chainId: Hex
  /** 100 pending, 200 confirmed, 400 failed off chain, 500 reverted, 600 partly reverted. */
  status: 100 | 200 | 400 | 500 | 600
  atomic: false
  receipts: readonly RpcReceipt[]
}

export type WalletCalls = {
  /** Checks a `wallet_sendCalls` request before the user is asked; throws WalletCallsError. */
  check(params: unknown): WalletCallsBatch
  /** Sends an approved batch, call after call; resolves with the `wallet_sendCalls` result. */
  send(batch: WalletCallsBatch): Promise<{ id: string }>
  getCallsStatus(params: unknown): Promise<WalletCallsStatus>
  getCapabilities(params: unknown): Record<Hex, { atomic: { status: 'unsupported' } }>
}

/** A sent batch: a hash per call that left, `null` for a call that could not be sent. */
type Sent = { chainId: number; hashes: (Hex | null)[] }

const isRecord = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value)
const invalid = (message: string) => new WalletCallsError(-32602, message)

/**
 * The EIP-5792 handlers of a wallet that holds an EOA.
 *
 * @example
 * const calls = createWalletCalls({ chainIds: [31337], address: () => account.address, sendTransaction, getReceipt })
 * const batch = calls.check(params) // before asking the user
 * const { id } = await calls.send(batch)
 */
export function createWalletCalls(options: WalletCallsOptions): WalletCalls {
  const storageKey = options.storageKey ?? 'latchkey.wallet.calls'
  const sent = new Map<string, Sent>(Object.entries(loadSent()))

  function loadSent(): Record<string, Sent> {
    try {
      const stored = JSON.parse(options.storage?.getItem(storageKey) ?? '{}') as unknown
      return isRecord(stored) ? (stored as Record<string, Sent>) : {}
    } catch {
      return {}
    }
  }

  function requireOurs(from: unknown) {
    if (typeof from !== 'string' || !isAddress(from, { strict: false }) || !isAddressEqual(from, options.address()))
      throw new WalletCallsError(4100, `${String(from)} is not this wallet's account`)
  }

  function optionalHex(value: unknown, what: string): Hex | undefined {
    if (value === undefined || value === null) return undefined
    if (!isHex(value)) throw invalid(`${what} is not hex`)
    return value
  }

  /** EIP-5792: a capability the wallet does not know is refused unless marked optional. */
  function refuseRequiredCapabilities(capabilities: unknown) {
    if (capabilities === undefined) return
    if (!isRecord(capabilities)) throw invalid('capabilities is not an object')
    for (const [name, value] of Object.entries(capabilities))
      if (!isRecord(value) || value['optional'] !== true) throw new WalletCallsError(5700, `Unsupported non-optional capability: ${name}`)
  }

  function check(params: unknown): WalletCallsBatch {
    const [request] = Array.isArray(params) ? params : []
    if (!isRecord(request)) throw invalid('wallet_sendCalls expects [{ version, chainId, calls }]')
    if (request['version'] !== '2.0.0' && request['version'] !== '1.0') throw invalid(`Unsupported version ${JSON.stringify(request['version'])}`)
    if (request['from'] !== undefined) requireOurs(request['from'])
    if (!isHex(request['chainId'])) throw invalid('chainId is not hex')
    const chainId = Number(request['chainId'])
    if (!options.chainIds.includes(chainId)) throw new WalletCallsError(5710, `Unsupported chain id ${request['chainId']}`)
    const list = request['calls']
    if (!Array.isArray(list) || list.length === 0) throw invalid('calls must be a non-empty list')
    refuseRequiredCapabilities(request['capabilities'])
    const calls = list.map((call, index): WalletCall => {
      if (!isRecord(call)) throw invalid(`call ${index} is not an object`)
      const to = optionalHex(call['to'], `call ${index}: to`)
      if (to !== undefined && !isAddress(to, { strict: false })) throw invalid(`call ${index}: to is not an address`)
      const value = optionalHex(call['value'], `call ${index}: value`)
      refuseRequiredCapabilities(call['capabilities'])
      return { to, value: value === undefined ? undefined : BigInt(value), data: optionalHex(call['data'], `call ${index}: data`) }
    }) as [WalletCall, ...WalletCall[]]
    // An EOA sends one transaction per call: a failure halfway leaves the first calls done.
    if (request['atomicRequired'] === true && calls.length > 1) throw new WalletCallsError(5760, 'This wallet cannot run calls atomically')
    const id = request['id']
    if (id !== undefined && (typeof id !== 'string' || id.length === 0 || id.length > 8194)) throw invalid('id must be a string of at most 4096 bytes')
    if (typeof id === 'string' && sent.has(id)) throw new WalletCallsError(5720, `Duplicate id ${id}`)
    return { id: id ?? randomId(), chainId, calls }
  }

  async function send(batch: WalletCallsBatch) {
    const hashes: (Hex | null)[] = []
    let firstError: unknown
    for (const call of batch.calls) {
      // After a call fails, the ones behind it are not sent: they may depend on it.
      if (firstError !== undefined) {
        hashes.push(null)
        continue
      }
      try {
        hashes.push(await options.sendTransaction(batch.chainId, call))
      } catch (error) {
        firstError = error
        hashes.push(null)
      }
    }
    // Nothing left the wallet: the request fails, and there is no batch to ask about.
    if (hashes.every((hash) => hash === null)) throw firstError
    sent.set(batch.id, { chainId: batch.chainId, hashes })
    try {
      options.storage?.setItem(storageKey, JSON.stringify(Object.fromEntries(sent)))
    } catch {
      // Remembered in memory still; only a reload forgets it.
    }
    return { id: batch.id }
  }

  async function getCallsStatus(params: unknown): Promise<WalletCallsStatus> {
    const [id] = Array.isArray(params) ? params : []
    if (typeof id !== 'string') throw invalid('wallet_getCallsStatus expects [id]')
    const batch = sent.get(id)
    if (!batch) throw new WalletCallsError(5730, `Unknown bundle id ${id}`)
    const receipts = await Promise.all(batch.hashes.map((hash) => (hash ? options.getReceipt(batch.chainId, hash) : null)))
    const pending = batch.hashes.some((hash, index) => hash !== null && receipts[index] === null)
    const mined = receipts
      .filter((receipt): receipt is RpcReceipt => receipt !== null)
      // The fields EIP-5792 names, not the RPC receipt's every field.
      .map(({ logs, status, blockHash, blockNumber, gasUsed, transactionHash }) => ({ logs, status, blockHash, blockNumber, gasUsed, transactionHash }))
    const succeeded = mined.filter((receipt) => receipt.status === '0x1').length
    const status = pending ? 100 : succeeded === batch.hashes.length ? 200 : succeeded === 0 ? 500 : 600
    return { version: '2.0.0', id, chainId: numberToHex(batch.chainId), status, atomic: false, receipts: mined }
  }

  function getCapabilities(params: unknown) {
    const [address, chainIds] = Array.isArray(params) ? params : []
    requireOurs(address)
    if (chainIds !== undefined && (!Array.isArray(chainIds) || !chainIds.every((chainId) => isHex(chainId))))
      throw invalid('chain ids must be a list of hex numbers')
    const asked = chainIds === undefined ? options.chainIds : options.chainIds.filter((chainId) => (chainIds as Hex[]).some((hex) => Number(hex) === chainId))
    return Object.fromEntries(asked.map((chainId) => [numberToHex(chainId), { atomic: { status: 'unsupported' as const } }]))
  }

  return { check, send, getCallsStatus, getCapabilities }
}

function randomId(): Hex {
  const bytes = crypto.getRandomValues(new Uint8Array(32))
  return `0x${[...bytes].map((byte) => byte.toString(16).padStart(2, '0')).join('')}`
}
