import type { IncomingMessage } from 'node:http'
import { type Metrics, routeObserver, tracingOn } from '@latchkey/service'
import { Hono } from 'hono'
import { z } from 'zod'
import { addressKey } from './limits.js'

/** JSON-RPC error codes the relay answers with, over the WebSocket and over HTTP. */
export const RelayErrorCode = {
  parse: -32700,
  invalidRequest: -32600,
  methodNotFound: -32601,
  invalidParams: -32602,
  internal: -32603,
  tooLarge: -32010,
  tooManySubscriptions: -32011,
  rateLimited: -32012,
  /** The `projectId` is missing or not one the relay accepts. */
  unknownProject: -32013,
  /** The chain's RPC did not answer in time. */
  upstreamTimeout: -32014,
  /** Storing the message would pass a storage quota (per topic, per client, or the relay's): nothing is stored. */
  quotaExceeded: -32015,
  /** `POST /v1/` forwards only the methods of `RPC_METHODS`. */
  methodNotAllowed: -32016,
} as const

export type RelayHttpOptions = {
  /** Chain RPCs by CAIP-2 chain id. */
  rpc: Readonly<Record<string, string>>
  /** Accepted project ids; empty or absent: any (and none). */
  projectIds?: readonly string[] | undefined
  /** How long the chain's RPC may take to answer, in ms. Default 10 000. */
  upstreamTimeoutMs?: number | undefined
  /** Largest request body, in bytes, counted as it streams in. Default 1 MiB. */
  maxBodyBytes?: number | undefined
  /**
   * JSON-RPC requests (each of a batch counts) one IP address (IPv6: one /64) may send per second;
   * past it the request is refused with 429. Default 100; 0: no limit.
   */
  maxRpcRequestsPerSecond?: number | undefined
  /** Counts requests by route template. Default: nothing counted. */
  metrics?: Metrics | undefined
}

/**
 * The methods `POST /v1/` forwards: what a dapp reads from a chain, and `eth_sendRawTransaction`
 * (signed by the wallet already). Anything else, `eth_sendTransaction` (which a node with unlocked
 * accounts, as anvil, would sign), `debug_*`, `trace_*`, `anvil_*`, filters and subscriptions, is
 * refused: the RPC behind the relay is the operator's, and its key is in its URL.
 */
export const RPC_METHODS: ReadonlySet<string> = new Set([
  'eth_blobBaseFee',
  'eth_blockNumber',
  'eth_call',
  'eth_chainId',
  'eth_createAccessList',
  'eth_estimateGas',
  'eth_feeHistory',
  'eth_gasPrice',
  'eth_getBalance',
  'eth_getBlockByHash',
  'eth_getBlockByNumber',
  'eth_getBlockReceipts',
  'eth_getBlockTransactionCountByHash',
  'eth_getBlockTransactionCountByNumber',
  'eth_getCode',
  'eth_getLogs',
  'eth_getProof',
  'eth_getStorageAt',
  'eth_getTransactionByBlockHashAndIndex',
  'eth_getTransactionByBlockNumberAndIndex',
  'eth_getTransactionByHash',
  'eth_getTransactionCount',
  'eth_getTransactionReceipt',
  'eth_maxPriorityFeePerGas',
  'eth_sendRawTransaction',
  'eth_syncing',
  'net_listening',
  'net_version',
  'web3_clientVersion',
])

const cors = {
  'access-control-allow-origin': '*',
  'access-control-allow-methods': 'POST, OPTIONS',
  'access-control-allow-headers': 'content-type',
  'access-control-max-age': '86400',
}

const query = z.object({
  chainId: z
    .string({ error: 'Invalid params: chainId must be a CAIP-2 id such as eip155:1' })
    .regex(/^[-a-z0-9]{3,8}:[-_a-zA-Z0-9]{1,32}$/, { error: 'Invalid params: chainId must be a CAIP-2 id such as eip155:1' }),
  projectId: z.string().optional(),
})

/** A JSON-RPC request or a batch of them: what the body must be before it goes upstream. */
const rpcRequest = z.looseObject({ jsonrpc: z.literal('2.0'), method: z.string() })
const rpcBody = z.union([rpcRequest, z.array(rpcRequest).min(1)])

/**
 * The relay's HTTP side as a Hono app: `POST /v1/?chainId=eip155:N&projectId=…`, the JSON-RPC
 * endpoint that SPEC §7 makes the eip155 default, forwards the body to the chain's configured RPC;
 * every other path says how to reach the relay (426). Failures are JSON-RPC errors.
 *
 * @example
 * const app = createRelayHttpApp({ rpc: { 'eip155:31337': 'http://127.0.0.1:8545' } })
 * const answer = await app.request('/v1/?chainId=eip155:31337', { method: 'POST', body: '{"jsonrpc":"2.0","id":1,"method":"eth_chainId"}' })
 */
export function createRelayHttpApp(options: RelayHttpOptions) {
  const projectIds = options.projectIds?.length ? new Set(options.projectIds) : undefined
  const timeoutMs = options.upstreamTimeoutMs ?? 10_000
  const maxBodyBytes = options.maxBodyBytes ?? 1024 * 1024
  const maxPerSecond = options.maxRpcRequestsPerSecond ?? 100
  if (!(Number.isSafeInteger(maxPerSecond) && maxPerSecond >= 0)) throw new RangeError('maxRpcRequestsPerSecond must be a whole number, 0 for no limit')
  /** Requests per address in the current second; a new second starts every count afresh. */
  let window = { second: -1, counts: new Map<string, number>() }
  /** Counts `count` requests from `address`: whether they are within the limit. */
  const withinRate = (address: string, count: number) => {
    if (maxPerSecond === 0) return true
    const second = Math.floor(Date.now() / 1000)
    if (second !== window.second) window = { second, counts: new Map() }
    const total = (window.counts.get(address) ?? 0) + count
    window.counts.set(address, total)
    return total <= maxPerSecond
  }
  const app = new Hono()
  // First, so that every request is counted (and, with traces on, spanned) by its route template.
  const observeRoutes = routeObserver(options.metrics, { tracing: tracingOn() })
  if (observeRoutes) app.use(observeRoutes)
  const rpcError = (status: 400 | 401 | 403 | 413 | 429 | 502 | 504, code: number, message: string, id: unknown = null) =>
    new Response(JSON.stringify({ jsonrpc: '2.0', id, error: { code, message } }), { status, headers: { ...cors, 'content-type': 'application/json' } })

  for (const path of ['/v1', '/v1/']) {
    app.options(path, () => new Response(null, { status: 204, headers: cors }))
    app.post(path, async (c) => {
      const checked = query.safeParse({ chainId: c.req.query('chainId'), projectId: c.req.query('projectId') })
      if (!checked.success) return rpcError(400, RelayErrorCode.invalidParams, checked.error.issues[0]?.message ?? 'Invalid params')
      const { chainId, projectId } = checked.data
      if (projectIds && !projectId)
        return rpcError(401, RelayErrorCode.unknownProject, 'Missing projectId: this relay answers only requests with one of its project ids')
      if (projectIds && projectId && !projectIds.has(projectId)) return rpcError(403, RelayErrorCode.unknownProject, `Unknown projectId ${projectId}`)
      const upstream = Object.hasOwn(options.rpc, chainId) ? options.rpc[chainId] : undefined
      if (!upstream) return rpcError(400, RelayErrorCode.invalidParams, `Unsupported chainId ${chainId}`)
      const body = await readBody(c.req.raw, maxBodyBytes)
      if (body === undefined) return rpcError(413, RelayErrorCode.tooLarge, `Request too large: at most ${maxBodyBytes} bytes`)
      let parsed: unknown
      try {
        parsed = JSON.parse(body)
      } catch {
        return rpcError(400, RelayErrorCode.parse, 'Parse error: the body is not JSON')
      }
      const request = rpcBody.safeParse(parsed)
      const id = idOf(parsed)
      if (!request.success) return rpcError(400, RelayErrorCode.invalidRequest, 'Invalid request: the body must be a JSON-RPC request or a batch of them', id)
      const requests = Array.isArray(request.data) ? request.data : [request.data]
      // A batch with one method not allowed is refused whole: nothing of it goes upstream.
      const refused = requests.find((entry) => !RPC_METHODS.has(entry.method))
      if (refused)
        return rpcError(
          403,
          RelayErrorCode.methodNotAllowed,
          `Method not allowed: ${refused.method.slice(0, 64)} (this relay forwards chain reads and eth_sendRawTransaction)`,
          id,
        )
      // Behind app.request() (tests) there is no socket: every request counts under one address.
      if (!withinRate(addressKey((c.env as { incoming?: IncomingMessage } | undefined)?.incoming?.socket.remoteAddress ?? ''), requests.length))
        return rpcError(429, RelayErrorCode.rateLimited, `Rate limit: at most ${maxPerSecond} JSON-RPC requests per second from your address`, id)
      // One deadline for the whole answer, body included: an RPC that sends headers and then
      // stalls is as unavailable as one that never answers.
      const signal = AbortSignal.timeout(timeoutMs)
      try {
        const answer = await fetch(upstream, { method: 'POST', headers: { 'content-type': 'application/json' }, body, signal })
        const text = await answer.text()
        return new Response(text, { status: answer.status, headers: { ...cors, 'content-type': answer.headers.get('content-type') ?? 'application/json' } })
      } catch {
        if (signal.aborted) return rpcError(504, RelayErrorCode.upstreamTimeout, `The RPC of ${chainId} did not answer within ${timeoutMs} ms`, id)
        return rpcError(502, RelayErrorCode.internal, `The RPC of ${chainId} is unavailable`, id)
      }
    })
    app.all(path, () => new Response(null, { status: 405, headers: { ...cors, allow: 'POST, OPTIONS' } }))
  }
  app.all('*', (c) => c.text('This is a WalletConnect relay: connect with a WebSocket, or POST JSON-RPC to /v1/?chainId=eip155:N.\n', 426))
  return app
}

/** The id of a single request, echoed in an error about it; null for a batch or none. */
function idOf(body: unknown): unknown {
  if (!body || typeof body !== 'object' || Array.isArray(body)) return null
  const { id } = body as { id?: unknown }
  return typeof id === 'number' || typeof id === 'string' ? id : null
}

/**
 * The body as text, counted while it streams in: undefined as soon as it passes `limit` bytes,
 * whatever `content-length` claims, and the rest is not read.
 */
async function readBody(request: Request, limit: number): Promise<string | undefined> {
  if (!request.body) return ''
  const reader = request.body.getReader()
  const chunks: Uint8Array[] = []
  let size = 0
  for (;;) {
    const { done, value } = await reader.read()
    if (done) break
    size += value.byteLength
    if (size > limit) {
      await reader.cancel().catch(() => undefined)
      return undefined
    }
    chunks.push(value)
  }
  return Buffer.concat(chunks).toString('utf8')
}
