import { ChainIdNotFoundError, EventNotGrantedError, NamespaceNotConfiguredError, NotControllerError, SessionNotFoundError } from '../errors.js'
import type { JsonRpcErrorObject } from '../jsonrpc.js'
import { assertConforms, assertSessionNamespaces, chainsOf, namespaceOf, type SessionNamespaces } from '../namespaces.js'
import { SEVEN_DAYS, type SessionRecord, type SignContext } from './context.js'
import type { sessionEventParams, sessionUpdateParams } from './messages.js'
import type { Pairings } from './pairing.js'
import type { Infer } from './schema.js'
import { SdkErrors } from './sdkErrors.js'
import type { Session } from './types.js'

/*
 * A settled session: updates (wallet only), events, extension, ping and the end of it, in both
 * directions.
 *
 * @internal
 */

/** Methods and events a session grants on one chain; undefined when the chain is not in it. */
export function grantedFor(session: Session, chainId: string) {
  const matching = Object.entries(session.namespaces)
    .filter(([key]) => namespaceOf(key) === namespaceOf(chainId))
    .map(([, value]) => value)
    .filter((value) => chainsOf(value).includes(chainId))
  if (!matching.length) return undefined
  return { methods: new Set(matching.flatMap((v) => v.methods)), events: new Set(matching.flatMap((v) => v.events)) }
}

/** Like `grantedFor`, for callers: throws the catalogue error that says what is missing. */
export function requireChain(session: Session, chainId: string) {
  const granted = grantedFor(session, chainId)
  if (granted) return granted
  if (!Object.keys(session.namespaces).some((key) => namespaceOf(key) === namespaceOf(chainId))) throw new NamespaceNotConfiguredError(namespaceOf(chainId))
  throw new ChainIdNotFoundError(`the session does not include ${chainId}`)
}

export function createSessions(ctx: SignContext, pairings: Pairings) {
  const { sessions, requests, relay, sendError, sendResult, sendRequest, now, report, events } = ctx

  function require(topic: string): SessionRecord {
    const session = sessions.get(topic)
    if (!session || session.expiry <= now()) throw new SessionNotFoundError(topic)
    return session
  }

  async function remove(topic: string) {
    sessions.delete(topic)
    for (const request of requests.values()) if (request.topic === topic) requests.delete(String(request.id))
    ctx.dropOutgoing(topic, new SessionNotFoundError(topic))
    await relay.unsubscribe(topic)
  }

  const api = {
    async update({ topic, namespaces }: { topic: string; namespaces: SessionNamespaces }) {
      const session = require(topic)
      if (session.controller !== session.self.publicKey) throw new NotControllerError(`topic ${topic}`)
      assertSessionNamespaces(namespaces)
      assertConforms(namespaces, session.requiredNamespaces)
      sessions.set(topic, { ...session, namespaces })
      await sendRequest(topic, 'wc_sessionUpdate', { namespaces })
    },

    async emit({ topic, event, chainId }: { topic: string; event: { name: string; data: unknown }; chainId: string }) {
      const granted = requireChain(require(topic), chainId)
      if (!granted.events.has(event.name)) throw new EventNotGrantedError(event.name, chainId)
      await sendRequest(topic, 'wc_sessionEvent', { event, chainId }, { awaitResponse: false })
    },

    async extend({ topic }: { topic: string }) {
      const session = require(topic)
      sessions.set(topic, { ...session, expiry: now() + SEVEN_DAYS })
      await sendRequest(topic, 'wc_sessionExtend', {})
    },

    async ping({ topic }: { topic: string }) {
      if (ctx.pairings.get(topic)) return void (await sendRequest(topic, 'wc_pairingPing', {}))
      require(topic)
      await sendRequest(topic, 'wc_sessionPing', {})
    },

    async disconnect({ topic, reason = SdkErrors.userDisconnected }: { topic: string; reason?: JsonRpcErrorObject | undefined }) {
      if (sessions.get(topic)) {
        // Sealed before the key is dropped; the relay client delivers it even after a reconnect.
        sendRequest(topic, 'wc_sessionDelete', reason, { awaitResponse: false }).catch(report)
        await remove(topic)
        return
      }
      if (ctx.pairings.get(topic)) {
        sendRequest(topic, 'wc_pairingDelete', reason, { awaitResponse: false }).catch(report)
        await pairings.remove(topic)
        return
      }
      throw new SessionNotFoundError(topic)
    },
  }

  const handlers = {
    async wc_sessionEvent(topic: string, id: number, { event, chainId }: Infer<typeof sessionEventParams>) {
      const session = sessions.get(topic)
      if (!session) return sendError(topic, id, 'wc_sessionEvent', SdkErrors.noMatchingKey)
      const granted = grantedFor(session, chainId)
      if (!granted) return sendError(topic, id, 'wc_sessionEvent', SdkErrors.unsupportedChains)
      if (!granted.events.has(event.name)) return sendError(topic, id, 'wc_sessionEvent', SdkErrors.unauthorizedEvent)
      await sendResult(topic, id, 'wc_sessionEvent', true)
      events.emit('session_event', { id, topic, params: { event, chainId } })
    },

    async wc_sessionUpdate(topic: string, id: number, { namespaces }: Infer<typeof sessionUpdateParams>) {
      const session = sessions.get(topic)
      if (!session) return sendError(topic, id, 'wc_sessionUpdate', SdkErrors.noMatchingKey)
      if (session.controller !== session.peer.publicKey) return sendError(topic, id, 'wc_sessionUpdate', SdkErrors.unauthorizedUpdate)
      try {
        assertSessionNamespaces(namespaces)
        assertConforms(namespaces, session.requiredNamespaces)
      } catch {
        return sendError(topic, id, 'wc_sessionUpdate', SdkErrors.invalidUpdate)
      }
      sessions.set(topic, { ...session, namespaces })
      await sendResult(topic, id, 'wc_sessionUpdate', true)
      events.emit('session_update', { id, topic, params: { namespaces } })
    },

    async wc_sessionExtend(topic: string, id: number) {
      const session = sessions.get(topic)
      if (!session) return sendError(topic, id, 'wc_sessionExtend', SdkErrors.noMatchingKey)
      sessions.set(topic, { ...session, expiry: now() + SEVEN_DAYS })
      await sendResult(topic, id, 'wc_sessionExtend', true)
      events.emit('session_extend', { id, topic })
    },

    async wc_sessionPing(topic: string, id: number) {
      if (!sessions.get(topic)) return sendError(topic, id, 'wc_sessionPing', SdkErrors.noMatchingKey)
      await sendResult(topic, id, 'wc_sessionPing', true)
      events.emit('session_ping', { id, topic })
    },

    async wc_sessionDelete(topic: string, id: number) {
      if (!sessions.get(topic)) return
      // Answer first: the answer needs the session key that the deletion throws away.
      await sendResult(topic, id, 'wc_sessionDelete', true).catch(report)
      await remove(topic)
      events.emit('session_delete', { id, topic })
    },
  }

  return { ...api, require, remove, handlers }
}

export type Sessions = ReturnType<typeof createSessions>
