import { PairingInUseError } from '../errors.js'
import { parsePairingUri } from '../uri.js'
import { type PairingRecord, type SignContext, THIRTY_DAYS, toPairing } from './context.js'
import type { Metadata, Pairing } from './types.js'

/*
 * Pairings: the first channel between a dapp and a wallet, made from the URI's key. Proposals
 * and one-click requests travel on it; once a session is made through it, it lives 30 days.
 *
 * @internal
 */

export function createPairings(ctx: SignContext) {
  const { pairings, proposals, auths, relay, sendResult, now, report, events } = ctx

  function activate(topic: string, peerMetadata: Metadata) {
    const pairing = pairings.get(topic)
    if (pairing) pairings.set(topic, { ...pairing, active: true, expiry: now() + THIRTY_DAYS, peerMetadata })
  }

  /** Drops a pairing with every proposal and one-click request that waits on it. */
  async function remove(topic: string) {
    pairings.delete(topic)
    for (const proposal of proposals.values())
      if (proposal.params.pairingTopic === topic) {
        proposals.delete(String(proposal.params.id))
        if (proposal.sessionTopic) await relay.unsubscribe(proposal.sessionTopic)
      }
    for (const auth of auths.values())
      if (auth.pairingTopic === topic) {
        auths.delete(String(auth.id))
        if (auth.responseTopic) await relay.unsubscribe(auth.responseTopic)
      }
    await relay.unsubscribe(topic)
  }

  async function pair({ uri }: { uri: string }): Promise<Pairing> {
    const parsed = parsePairingUri(uri, { now: now() })
    if (pairings.get(parsed.topic)?.active) throw new PairingInUseError(`topic ${parsed.topic}`)
    const pairing: PairingRecord = {
      topic: parsed.topic,
      symKey: parsed.symKey,
      expiry: parsed.expiryTimestamp,
      active: false,
      ...(parsed.methods ? { methods: [...parsed.methods] } : {}),
    }
    pairings.set(parsed.topic, pairing)
    await relay.subscribe(parsed.topic)
    return toPairing(pairing)
  }

  const handlers = {
    async wc_pairingPing(topic: string, id: number) {
      await sendResult(topic, id, 'wc_pairingPing', true)
      events.emit('pairing_ping', { id, topic })
    },
    async wc_pairingDelete(topic: string, id: number) {
      if (!pairings.get(topic)) return
      await sendResult(topic, id, 'wc_pairingDelete', true).catch(report)
      await remove(topic)
      events.emit('pairing_delete', { id, topic })
    },
  }

  return { pair, activate, remove, handlers }
}

export type Pairings = ReturnType<typeof createPairings>
