import { MethodNotGrantedError } from '../errors.js'
import type { JsonRpcResponse } from '../jsonrpc.js'
import { FIVE_MINUTES, RPC, SEVEN_DAYS, type SignContext } from './context.js'
import type { sessionRequestParams } from './messages.js'
import type { Infer } from './schema.js'
import { SdkErrors } from './sdkErrors.js'
import { grantedFor, requireChain, type Sessions } from './session.js'
import type { PendingRequest, SessionRequestParams } from './types.js'

/*
 * Session requests: the dapp asks (`personal_sign`, `solana_signMessage`, …) on a chain of the
 * session, the wallet answers. Each is checked against what the session grants on that chain.
 *
 * @internal
 */

const MAX_PENDING_REQUESTS = 200

export function createRequests(ctx: SignContext, sessions: Sessions) {
  const { requests, sendError, sendRequest, now, events, publish } = ctx

  async function request<result = unknown>({
    topic,
    chainId,
    request,
    expiry = FIVE_MINUTES,
  }: {
    topic: string
    chainId: string
    request: { method: string; params?: unknown }
    expiry?: number | undefined
  }): Promise<result> {
    const granted = requireChain(sessions.require(topic), chainId)
    if (!granted.methods.has(request.method)) throw new MethodNotGrantedError(request.method, chainId)
    const ttl = Math.min(SEVEN_DAYS, Math.max(FIVE_MINUTES, expiry))
    const params: SessionRequestParams = {
      request: { method: request.method, params: request.params ?? [], expiryTimestamp: now() + ttl },
      chainId,
    }
    return (await sendRequest(topic, 'wc_sessionRequest', params, { ttl })) as result
  }

  async function respond({ topic, response }: { topic: string; response: JsonRpcResponse }) {
    sessions.require(topic)
    requests.delete(String(response.id))
    await publish(topic, response, RPC.wc_sessionRequest!.res)
  }

  const handlers = {
    async wc_sessionRequest(topic: string, id: number, { request: inner, chainId }: Infer<typeof sessionRequestParams>) {
      const fail = (error: { code: number; message: string }) => sendError(topic, id, 'wc_sessionRequest', error)
      const session = ctx.sessions.get(topic)
      if (!session) return fail(SdkErrors.noMatchingKey)
      const granted = grantedFor(session, chainId)
      if (!granted) return fail(SdkErrors.unsupportedChains)
      if (!granted.methods.has(inner.method)) return fail(SdkErrors.unauthorizedMethod)
      if (inner.expiryTimestamp !== undefined && inner.expiryTimestamp < now()) return fail(SdkErrors.expired)
      const pending: PendingRequest = { id, topic, params: { request: inner, chainId } }
      const all = requests.values()
      if (all.length >= MAX_PENDING_REQUESTS) requests.delete(String(all[0]!.id))
      requests.set(String(id), pending)
      events.emit('session_request', pending)
    },
  }

  return { request, respond, handlers }
}
