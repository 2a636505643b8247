import { decrypt } from './crypto.js'
import { PeerError } from './errors.js'
import { isRequest, isResponse, type JsonRpcRequest } from './jsonrpc.js'
import type { RelayMessage } from './relayClient.js'
import { createContext, type SignContext, toPairing, toSession } from './sign/context.js'
import { requestSchemas } from './sign/messages.js'
import { createPairings } from './sign/pairing.js'
import { createProposals } from './sign/proposal.js'
import { createRequests } from './sign/request.js'
import { parse } from './sign/schema.js'
import { SdkErrors } from './sign/sdkErrors.js'
import { createSessions } from './sign/session.js'
import type { SignClient, SignClientOptions } from './sign/types.js'

export type { AuthenticateParameters, AuthenticateRequest, AuthenticateResult, AuthPayload, Cacao } from './sign/authTypes.js'
export { SdkErrors } from './sign/sdkErrors.js'
export type {
  ConnectParameters,
  Metadata,
  Pairing,
  PendingRequest,
  ProposalParams,
  Session,
  SessionEventParams,
  SessionRequestParams,
  SignClient,
  SignClientEvents,
  SignClientOptions,
} from './sign/types.js'

/*
 * The WalletConnect v2 Sign protocol, both roles in one client. A dapp calls `connect` (or
 * `authenticate` for one-click sign-in) and waits; a wallet calls `pair` with the URI, hears
 * `session_proposal` (or `session_authenticate`) and answers. After that both sides send
 * requests, responses and events on the session topic, encrypted with the key the two derived.
 *
 * This file wires the parts (sign/pairing, proposal, session, request, auth) to the relay: every
 * message is decrypted, checked against its schema (sign/messages) and only then handed to the
 * part that owns its method. A message that fails its schema is dropped with a warning; nothing
 * it names changes.
 *
 * Everything needed to carry on after a reload is kept in storage under `<prefix>.*`; expired
 * records are dropped by `cleanup()`, which runs at start and every 30 seconds.
 */

const SEEN_REQUESTS = 1000

/**
 * Creates a Sign client and restores what storage holds: pairings, sessions and unanswered
 * proposals and requests, re-subscribing their topics.
 *
 * @example
 * const dapp = await createSignClient({ relayUrl: 'ws://127.0.0.1:5555', metadata, storage: localStorage })
 * const { uri, approval } = await dapp.connect({ optionalNamespaces: { eip155: { chains: ['eip155:1'], methods: ['personal_sign'], events: ['chainChanged'] } } })
 * showQr(uri)
 * const session = await approval()
 */
export async function createSignClient(options: SignClientOptions): Promise<SignClient> {
  const ctx = createContext(options)
  const pairings = createPairings(ctx)
  const sessions = createSessions(ctx, pairings)
  const proposals = createProposals(ctx, pairings)
  const requests = createRequests(ctx, sessions)
  // One-click sign-in (and its CACAO and ReCap code) loads with its first use: most sessions never need it.
  let authPart: Promise<ReturnType<typeof import('./sign/auth.js').createAuth>> | undefined
  const auth = () => (authPart ??= import('./sign/auth.js').then(({ createAuth }) => createAuth(ctx, pairings, proposals)))
  const wake = () => void cleanup().catch(ctx.report)

  const handlers: Record<string, (topic: string, id: number, params: never) => Promise<unknown>> = {
    ...pairings.handlers,
    ...sessions.handlers,
    ...requests.handlers,
    wc_sessionPropose: (topic, id, params) => proposals.onPropose(topic, id, params, ignoresFallback(topic)),
    wc_sessionSettle: (topic, id, params) => proposals.onSettle(topic, id, params),
    wc_sessionAuthenticate: async (topic, id, params) => (await auth()).onRequest(topic, id, params),
  }

  /** A wallet that answers one-click requests leaves their fallback proposal unseen. */
  function ignoresFallback(topic: string) {
    return Boolean(ctx.pairings.get(topic)?.methods?.includes('wc_sessionAuthenticate')) && ctx.events.listenerCount('session_authenticate') > 0
  }

  ctx.relay.onMessage(async ({ topic, message }: RelayMessage) => {
    let text: string | undefined
    try {
      const symKey = ctx.keyFor(topic)
      if (symKey) text = decrypt({ symKey, envelope: message })
      else if (ctx.auths.values().some((record) => record.responseTopic === topic)) text = (await auth()).open(topic, message)
    } catch (error) {
      return ctx.report(error)
    }
    if (text === undefined) {
      // A topic we no longer hold: stop hearing it instead of failing on every message.
      await ctx.relay.unsubscribe(topic)
      return
    }
    let payload: unknown
    try {
      payload = JSON.parse(text)
    } catch {
      return ctx.logger.warn(`WalletConnect: dropped a message on ${topic} that is not JSON`)
    }
    try {
      if (isRequest(payload)) return await onRequest(topic, payload)
      if (isResponse(payload)) {
        if (ctx.auths.get(String(payload.id)) && (await (await auth()).onResponse(topic, payload))) return
        if (await proposals.onResponse(topic, payload)) return
        const entry = ctx.settleOutgoing(topic, payload)
        if (!entry) return
        if ('error' in payload) entry.reject(new PeerError(payload.error))
        else entry.resolve(payload.result)
        return
      }
      ctx.logger.warn(`WalletConnect: dropped a message on ${topic} that is neither a JSON-RPC request nor a response`)
    } catch (error) {
      ctx.report(error)
    }
  })

  const seenRequests = new Set<string>()

  async function onRequest(topic: string, request: JsonRpcRequest) {
    const seenKey = `${topic}:${request.id}`
    if (seenRequests.has(seenKey)) return
    seenRequests.add(seenKey)
    if (seenRequests.size > SEEN_REQUESTS) seenRequests.delete(seenRequests.values().next().value as string)
    const handler = handlers[request.method]
    const schema = requestSchemas[request.method]
    if (!handler || !schema) return ctx.sendError(topic, request.id, request.method, SdkErrors.methodUnsupported)
    const parsed = parse(schema, request.params)
    if (!parsed.ok) {
      // Dropped, not answered: a peer that sends garbage learns nothing, and no state changes.
      ctx.logger.warn(`WalletConnect: dropped ${request.method} on ${topic}: ${parsed.issue.path} ${parsed.issue.message}`)
      return
    }
    await handler(topic, request.id, parsed.value as never)
  }

  async function cleanup() {
    const t = ctx.now()
    for (const session of ctx.sessions.values())
      if (session.expiry <= t) {
        await sessions.remove(session.topic)
        ctx.events.emit('session_expire', { topic: session.topic })
      }
    if (ctx.auths.keys().length) await (await auth()).expire()
    await proposals.expire()
    for (const pairing of ctx.pairings.values())
      if (pairing.expiry <= t) {
        await pairings.remove(pairing.topic)
        ctx.events.emit('pairing_expire', { topic: pairing.topic })
      }
    for (const request of ctx.requests.values()) {
      const expiry = request.params.request.expiryTimestamp
      if ((expiry !== undefined && expiry <= t) || !ctx.sessions.get(request.topic)) {
        ctx.requests.delete(String(request.id))
        ctx.events.emit('session_request_expire', { id: request.id, topic: request.topic })
      }
    }
  }

  await cleanup()
  resubscribe(ctx)
  const sweeper = setInterval(wake, 30_000)
  ;(sweeper as { unref?: () => void }).unref?.()

  return {
    events: ctx.events,
    clientId: ctx.relay.clientId,
    metadata: options.metadata,
    connect: (parameters) => proposals.connect(parameters, wake),
    authenticate: async (parameters) => (await auth()).authenticate(parameters, wake),
    request: requests.request,
    pair: pairings.pair,
    approve: proposals.approve,
    reject: proposals.reject,
    respond: requests.respond,
    update: sessions.update,
    emit: sessions.emit,
    approveAuthenticate: async (parameters) => (await auth()).approveAuthenticate(parameters),
    rejectAuthenticate: async (parameters) => (await auth()).rejectAuthenticate(parameters),
    extend: sessions.extend,
    ping: sessions.ping,
    disconnect: sessions.disconnect,
    sessions: () =>
      ctx.sessions
        .values()
        .filter((s) => s.expiry > ctx.now())
        .map(toSession),
    session: (topic) => {
      const record = ctx.sessions.get(topic)
      return record && record.expiry > ctx.now() ? toSession(record) : undefined
    },
    pairings: () => ctx.pairings.values().map(toPairing),
    proposals: () =>
      ctx.proposals
        .values()
        .filter((p) => p.role === 'wallet')
        .map((p) => p.params),
    pendingRequests: () => ctx.requests.values(),
    pendingAuthenticates: () =>
      ctx.auths
        .values()
        .filter((record) => record.role === 'wallet')
        .map((record) => ({ id: record.id, topic: record.pairingTopic, params: record.request })),
    cleanup,
    close() {
      clearInterval(sweeper)
      ctx.close()
    },
  }
}

/**
 * Re-subscribes what storage holds on the next task, so that listeners attached right after
 * `await createSignClient()` hear the messages stored for us while we were away.
 */
function resubscribe(ctx: SignContext) {
  const topics = [
    ...ctx.pairings.keys(),
    ...ctx.sessions.keys(),
    ...ctx.proposals.values().flatMap((p) => (p.sessionTopic ? [p.sessionTopic] : [])),
    ...ctx.auths.values().flatMap((a) => (a.responseTopic ? [a.responseTopic] : [])),
  ]
  setTimeout(() => {
    for (const topic of topics) ctx.relay.subscribe(topic).catch(ctx.report)
  }, 0)
}
