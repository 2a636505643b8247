import { deriveSymKey, generateKeyPair, generateSymKey, topicOf } from '../crypto.js'
import { ExpiredError, PairingAbortedError, PeerError, ProposalNotFoundError, SessionNotFoundError } from '../errors.js'
import { isErrorResponse, type JsonRpcErrorObject, type JsonRpcResponse, payloadId } from '../jsonrpc.js'
import { assertConforms, assertProposalNamespaces, assertSessionNamespaces, type ProposalNamespaces, type SessionNamespaces } from '../namespaces.js'
import { formatPairingUri } from '../uri.js'
import { FIVE_MINUTES, type ProposalRecord, RPC, SEVEN_DAYS, type SessionRecord, type SignContext, toSession, unrefTimer } from './context.js'
import { type proposeParams, proposeResult, type settleParams, toMetadata } from './messages.js'
import type { Pairings } from './pairing.js'
import { type Infer, parse } from './schema.js'
import { SdkErrors } from './sdkErrors.js'
import type { ConnectParameters, ProposalParams, Session } from './types.js'

/*
 * Proposals and settlement: the dapp proposes namespaces on the pairing, the wallet answers with
 * its public key (both derive the session key) and settles the session on the new topic.
 *
 * @internal
 */

type SettleParams = {
  relay: { protocol: string }
  namespaces: SessionNamespaces
  controller: { publicKey: string; metadata: ProposalParams['proposer']['metadata'] }
  expiry: number
  sessionProperties?: Record<string, string>
}

export function createProposals(ctx: SignContext, pairings: Pairings) {
  const { proposals, approvals, sessions, relay, sendError, sendResult, sendRequest, now, logger, events } = ctx

  function settleApproval(id: number, error: Error) {
    const approval = approvals.get(id)
    if (!approval) return
    clearTimeout(approval.timer)
    approvals.delete(id)
    approval.reject(error)
  }

  /**
   * Sends a proposal on a pairing this dapp made; resolves with the settled session. The timer
   * wakes `onExpire` (the client's cleanup) just after the proposal's expiry.
   */
  async function propose(
    parameters: {
      pairingTopic: string
      keys: { publicKey: string; privateKey: string }
      requiredNamespaces: ProposalNamespaces
      optionalNamespaces: ProposalNamespaces
      sessionProperties?: Record<string, string> | undefined
      expiryTimestamp: number
      fallbackFor?: number | undefined
    },
    onExpire: () => void,
  ): Promise<{ id: number; approval: Promise<Session> }> {
    const id = payloadId()
    const params: ProposalParams = {
      id,
      requiredNamespaces: parameters.requiredNamespaces,
      optionalNamespaces: parameters.optionalNamespaces,
      relays: [{ protocol: 'irn' }],
      proposer: { publicKey: parameters.keys.publicKey, metadata: ctx.metadata },
      expiryTimestamp: parameters.expiryTimestamp,
      pairingTopic: parameters.pairingTopic,
      ...(parameters.sessionProperties ? { sessionProperties: parameters.sessionProperties } : {}),
    }
    proposals.set(String(id), {
      params,
      role: 'dapp',
      privateKey: parameters.keys.privateKey,
      ...(parameters.fallbackFor === undefined ? {} : { fallbackFor: parameters.fallbackFor }),
    })
    const approval = new Promise<Session>((resolve, reject) => {
      approvals.set(id, { resolve, reject, timer: unrefTimer(onExpire, (parameters.expiryTimestamp - now()) * 1000 + 50) })
    })
    approval.catch(() => undefined)
    await sendRequest(parameters.pairingTopic, 'wc_sessionPropose', params, { id, awaitResponse: false })
    return { id, approval }
  }

  /** Drops a dapp proposal (and stops hearing its session topic). */
  async function drop(id: number, error: Error) {
    const proposal = proposals.get(String(id))
    proposals.delete(String(id))
    if (proposal?.sessionTopic) await relay.unsubscribe(proposal.sessionTopic)
    settleApproval(id, error)
  }

  async function connect({ requiredNamespaces = {}, optionalNamespaces = {}, sessionProperties, signal }: ConnectParameters, onExpire: () => void) {
    assertProposalNamespaces(requiredNamespaces)
    assertProposalNamespaces(optionalNamespaces)
    signal?.throwIfAborted()
    const symKey = generateSymKey()
    const pairingTopic = topicOf(symKey)
    const expiryTimestamp = now() + FIVE_MINUTES
    ctx.pairings.set(pairingTopic, { topic: pairingTopic, symKey, expiry: expiryTimestamp, active: false })
    await relay.subscribe(pairingTopic)
    const { id, approval } = await propose(
      { pairingTopic, keys: generateKeyPair(), requiredNamespaces, optionalNamespaces, sessionProperties, expiryTimestamp },
      onExpire,
    )
    const onAbort = () => {
      settleApproval(id, signal?.reason instanceof Error ? signal.reason : new PairingAbortedError())
      proposals.delete(String(id))
      void pairings.remove(pairingTopic)
    }
    // The signal may have fired while the proposal was on its way.
    if (signal?.aborted) onAbort()
    else signal?.addEventListener('abort', onAbort, { once: true })
    const uri = formatPairingUri({ topic: pairingTopic, version: 2, relay: { protocol: 'irn' }, symKey, expiryTimestamp })
    return { uri, id, pairingTopic, approval: () => approval }
  }

  function requireWalletProposal(id: number): ProposalRecord {
    const proposal = proposals.get(String(id))
    if (proposal?.role !== 'wallet') throw new ProposalNotFoundError(`id ${id}`)
    return proposal
  }

  async function approve({
    id,
    namespaces,
    sessionProperties,
  }: {
    id: number
    namespaces: SessionNamespaces
    sessionProperties?: Record<string, string> | undefined
  }) {
    const proposal = requireWalletProposal(id)
    if (proposal.params.expiryTimestamp <= now()) throw new ExpiredError('Proposal')
    assertSessionNamespaces(namespaces)
    assertConforms(namespaces, proposal.params.requiredNamespaces)
    const { pairingTopic, proposer } = proposal.params
    const keys = generateKeyPair()
    const symKey = deriveSymKey(keys.privateKey, proposer.publicKey)
    const topic = topicOf(symKey)
    const self = { publicKey: keys.publicKey, metadata: ctx.metadata }
    // The wallet may narrow what the dapp asked for, never add keys the dapp did not ask about.
    const properties = sessionProperties ?? proposal.params.sessionProperties
    const settle: SettleParams = {
      relay: { protocol: 'irn' },
      namespaces,
      controller: self,
      expiry: now() + SEVEN_DAYS,
      ...(properties ? { sessionProperties: properties } : {}),
    }
    sessions.set(topic, {
      topic,
      symKey,
      pairingTopic,
      relay: settle.relay,
      expiry: settle.expiry,
      acknowledged: false,
      controller: keys.publicKey,
      namespaces,
      requiredNamespaces: proposal.params.requiredNamespaces,
      optionalNamespaces: proposal.params.optionalNamespaces,
      ...(properties ? { sessionProperties: properties } : {}),
      self,
      peer: proposer,
    })
    proposals.delete(String(id))
    await relay.subscribe(topic)
    await sendResult(pairingTopic, id, 'wc_sessionPropose', { relay: { protocol: 'irn' }, responderPublicKey: keys.publicKey })
    pairings.activate(pairingTopic, proposer.metadata)
    const acknowledged = sendRequest(topic, 'wc_sessionSettle', settle).then(() => {
      const session = sessions.get(topic)
      if (!session) throw new SessionNotFoundError(topic)
      sessions.set(topic, { ...session, acknowledged: true })
      return toSession({ ...session, acknowledged: true })
    })
    acknowledged.catch(() => undefined)
    return { topic, acknowledged: () => acknowledged }
  }

  async function reject({ id, reason = SdkErrors.userRejected }: { id: number; reason?: JsonRpcErrorObject | undefined }) {
    const proposal = requireWalletProposal(id)
    proposals.delete(String(id))
    await sendError(proposal.params.pairingTopic, id, 'wc_sessionPropose', reason, RPC.wc_sessionPropose!.reject)
  }

  /** Wallet: a proposal arrived on a pairing we hold. */
  async function onPropose(topic: string, id: number, params: Infer<typeof proposeParams>, ignore: boolean) {
    const pairing = ctx.pairings.get(topic)
    if (!pairing) return
    const requiredNamespaces = params.requiredNamespaces ?? {}
    const optionalNamespaces = params.optionalNamespaces ?? {}
    try {
      assertProposalNamespaces(requiredNamespaces)
      assertProposalNamespaces(optionalNamespaces)
    } catch {
      return sendError(topic, id, 'wc_sessionPropose', { code: 1006, message: 'Invalid namespaces.' }, RPC.wc_sessionPropose!.reject)
    }
    if (params.expiryTimestamp !== undefined && params.expiryTimestamp < now()) return
    const proposer = { publicKey: params.proposer.publicKey, metadata: toMetadata(params.proposer.metadata) }
    const proposal: ProposalParams = {
      id,
      requiredNamespaces,
      optionalNamespaces,
      relays: params.relays ?? [{ protocol: 'irn' }],
      proposer,
      expiryTimestamp: params.expiryTimestamp ?? now() + FIVE_MINUTES,
      pairingTopic: topic,
      ...(params.sessionProperties ? { sessionProperties: params.sessionProperties } : {}),
    }
    ctx.pairings.set(topic, { ...pairing, peerMetadata: proposer.metadata })
    // The fallback of a one-click request this wallet answers itself: kept out of sight.
    if (ignore) return
    proposals.set(String(id), { params: proposal, role: 'wallet' })
    events.emit('session_proposal', { id, params: proposal })
  }

  /** Dapp: the settlement arrived on the session topic the wallet's answer named. */
  async function onSettle(topic: string, id: number, params: Infer<typeof settleParams>) {
    const proposal = proposals.values().find((p) => p.sessionTopic === topic)
    if (!proposal?.sessionSymKey) return
    try {
      assertSessionNamespaces(params.namespaces)
      assertConforms(params.namespaces, proposal.params.requiredNamespaces)
    } catch (error) {
      await sendError(topic, id, 'wc_sessionSettle', SdkErrors.invalidSettle)
      proposals.delete(String(proposal.params.id))
      settleApproval(proposal.params.id, error as Error)
      return
    }
    const controller = { publicKey: params.controller.publicKey, metadata: toMetadata(params.controller.metadata) }
    // Wallets that do not echo them still made the session the dapp asked for.
    const properties = params.sessionProperties ?? proposal.params.sessionProperties
    const session: SessionRecord = {
      topic,
      symKey: proposal.sessionSymKey,
      pairingTopic: proposal.params.pairingTopic,
      relay: params.relay ?? { protocol: 'irn' },
      expiry: params.expiry,
      acknowledged: true,
      controller: controller.publicKey,
      namespaces: params.namespaces,
      requiredNamespaces: proposal.params.requiredNamespaces,
      optionalNamespaces: proposal.params.optionalNamespaces,
      ...(properties ? { sessionProperties: properties } : {}),
      self: proposal.params.proposer,
      peer: controller,
    }
    sessions.set(topic, session)
    proposals.delete(String(proposal.params.id))
    pairings.activate(proposal.params.pairingTopic, controller.metadata)
    await sendResult(topic, id, 'wc_sessionSettle', true)
    const view = toSession(session)
    const approval = approvals.get(proposal.params.id)
    if (approval) {
      clearTimeout(approval.timer)
      approvals.delete(proposal.params.id)
      approval.resolve(view)
    }
    events.emit('session_connect', { session: view })
  }

  /** Dapp: the wallet's answer to a proposal; true when `response` was one. */
  async function onResponse(topic: string, response: JsonRpcResponse): Promise<boolean> {
    const proposal = proposals.get(String(response.id))
    if (proposal?.role !== 'dapp' || proposal.params.pairingTopic !== topic) return false
    if (isErrorResponse(response)) {
      proposals.delete(String(response.id))
      settleApproval(response.id, new PeerError(response.error))
      return true
    }
    const result = parse(proposeResult, response.result)
    if (!result.ok || !proposal.privateKey) {
      if (!result.ok) logger.warn(`WalletConnect: dropped a malformed wc_sessionPropose answer (${result.issue.path} ${result.issue.message})`)
      return true
    }
    const sessionSymKey = deriveSymKey(proposal.privateKey, result.value.responderPublicKey)
    const sessionTopic = topicOf(sessionSymKey)
    proposals.set(String(response.id), { ...proposal, sessionTopic, sessionSymKey })
    await relay.subscribe(sessionTopic)
    return true
  }

  /** Drops expired proposals; returns their ids. */
  async function expire() {
    const t = now()
    for (const proposal of proposals.values())
      if (proposal.params.expiryTimestamp <= t) {
        proposals.delete(String(proposal.params.id))
        if (proposal.sessionTopic) await relay.unsubscribe(proposal.sessionTopic)
        settleApproval(proposal.params.id, new ExpiredError('Proposal'))
        events.emit('proposal_expire', { id: proposal.params.id })
      }
  }

  return { connect, propose, drop, approve, reject, onPropose, onSettle, onResponse, expire, settleApproval }
}

export type Proposals = ReturnType<typeof createProposals>
