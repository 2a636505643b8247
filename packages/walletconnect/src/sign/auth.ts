import { sha256 } from '@noble/hashes/sha2.js'
import { bytesToHex, hexToBytes } from '@noble/hashes/utils.js'
import { chainsOfRecap, createRecap, decodeRecap, encodeRecap, methodsOfRecap, parseDidPkh, recapOf } from '../cacao.js'
import { decodeEnvelope, decrypt, deriveSymKey, generateKeyPair, generateSymKey, topicOf } from '../crypto.js'
import { ExpiredError, InvalidAuthenticateParametersError, PairingAbortedError, PeerError, ProposalNotFoundError } from '../errors.js'
import { isErrorResponse, type JsonRpcErrorObject, type JsonRpcResponse, payloadId } from '../jsonrpc.js'
import { isChainId, namespaceOf, type SessionNamespaces } from '../namespaces.js'
import { formatPairingUri } from '../uri.js'
import { authenticateParams, authenticateResult } from './authMessages.js'
import type { AuthenticateParameters, AuthenticateRequest, AuthenticateResult, AuthRecord, Cacao } from './authTypes.js'
import { type Deferred, RPC, SEVEN_DAYS, type SessionRecord, type SignContext, toSession } from './context.js'
import { toMetadata } from './messages.js'
import type { Pairings } from './pairing.js'
import type { Proposals } from './proposal.js'
import { parse } from './schema.js'
import { SdkErrors } from './sdkErrors.js'
import type { Session } from './types.js'

/*
 * One-click sign-in (`wc_sessionAuthenticate`, CAIP-222), both roles.
 *
 * The dapp sends the SIWE fields on a new pairing and, on the same pairing, a plain proposal as
 * the fallback. The wallet either signs one CACAO per chain and answers on the response topic
 * (sha256 of the dapp's key, sealed in a type 1 envelope), which makes the session at once, or
 * does not know the method and approves the proposal. Whichever comes first settles `response()`;
 * a refusal or the expiry ends it, so nothing waits forever.
 *
 * @internal
 */

const DEFAULT_EVENTS = ['chainChanged', 'accountsChanged']
const METHOD = 'wc_sessionAuthenticate'

/** Where the wallet answers a one-click request: sha256 of the requester's public key. */
export function responseTopicOf(publicKey: string): string {
  return bytesToHex(sha256(hexToBytes(publicKey)))
}

/** The session namespaces a set of CACAOs grants: each signer on its chain and its ReCap's chains. */
export function namespacesFromCacaos(cacaos: readonly Cacao[]): SessionNamespaces {
  const namespaces: SessionNamespaces = {}
  for (const cacao of cacaos) {
    const { chainId, address } = parseDidPkh(cacao.p.iss)
    const recap = recapOf(cacao.p.resources)
    const chains = [chainId, ...(recap ? chainsOfRecap(recap) : [])]
    const methods = recap ? methodsOfRecap(recap) : []
    for (const chain of chains) {
      const key = namespaceOf(chain)
      const entry = (namespaces[key] ??= { accounts: [], chains: [], methods: [], events: [...DEFAULT_EVENTS] })
      if (!entry.chains?.includes(chain)) entry.chains?.push(chain)
      if (!entry.accounts.includes(`${chain}:${address}`)) entry.accounts.push(`${chain}:${address}`)
      for (const method of methods) if (!entry.methods.includes(method)) entry.methods.push(method)
    }
  }
  return namespaces
}

export function createAuth(ctx: SignContext, pairings: Pairings, proposals: Proposals) {
  const { auths, relay, sessions } = ctx
  const waiting = new Map<number, Deferred<AuthenticateResult>>()

  function finish(id: number, outcome: { result: AuthenticateResult } | { error: Error }) {
    const deferred = waiting.get(id)
    const record = auths.get(String(id))
    auths.delete(String(id))
    if (record?.responseTopic) relay.unsubscribe(record.responseTopic).catch(ctx.report)
    if (!deferred) return
    waiting.delete(id)
    clearTimeout(deferred.timer)
    if ('result' in outcome) deferred.resolve(outcome.result)
    else deferred.reject(outcome.error)
  }

  async function authenticate(parameters: AuthenticateParameters, onExpire: () => void) {
    const { chains, domain, uri, nonce, methods = [], signal } = parameters
    if (!Array.isArray(chains) || !chains.length) throw new InvalidAuthenticateParametersError('chains must name at least one chain')
    for (const chain of chains)
      if (!isChainId(chain) || namespaceOf(chain) !== 'eip155') throw new InvalidAuthenticateParametersError(`${chain} is not an eip155 CAIP-2 chain id`)
    if (!domain || /[\s/]/.test(domain)) throw new InvalidAuthenticateParametersError('domain must be a host, such as example.com')
    if (!/^[a-zA-Z0-9]{8,}$/.test(nonce)) throw new InvalidAuthenticateParametersError('nonce must be at least 8 letters or digits (EIP-4361)')
    signal?.throwIfAborted()

    const symKey = generateSymKey()
    const pairingTopic = topicOf(symKey)
    const expiryTimestamp = ctx.now() + (parameters.expiry ?? 300)
    ctx.pairings.set(pairingTopic, { topic: pairingTopic, symKey, expiry: expiryTimestamp, active: false, methods: [METHOD] })
    const keys = generateKeyPair()
    const responseTopic = responseTopicOf(keys.publicKey)

    const resources = [...(parameters.resources ?? [])]
    if (methods.length) {
      const recap = createRecap('eip155', methods)
      const existing = recapOf(resources)
      // ReCaps merge into the one last resource.
      if (existing) resources.pop()
      resources.push(existing ? encodeRecap({ att: { ...decodeRecap(existing).att, ...decodeRecap(recap).att } }) : recap)
    }
    const request: AuthenticateRequest = {
      authPayload: {
        type: 'caip122',
        chains,
        statement: parameters.statement ?? '',
        aud: uri,
        domain,
        version: '1',
        nonce,
        iat: new Date(ctx.now() * 1000).toISOString(),
        ...(parameters.exp ? { exp: parameters.exp } : {}),
        ...(parameters.nbf ? { nbf: parameters.nbf } : {}),
        ...(parameters.requestId ? { requestId: parameters.requestId } : {}),
        resources,
      },
      requester: { publicKey: keys.publicKey, metadata: ctx.metadata },
      expiryTimestamp,
    }
    const id = payloadId()
    auths.set(String(id), { id, role: 'dapp', pairingTopic, request, privateKey: keys.privateKey, responseTopic })
    const response = new Promise<AuthenticateResult>((resolve, reject) => {
      waiting.set(id, { resolve, reject, timer: setTimeout(onExpire, (expiryTimestamp - ctx.now()) * 1000 + 50) })
      ;(waiting.get(id)!.timer as { unref?: () => void }).unref?.()
    })
    response.catch(() => undefined)

    await relay.subscribe(pairingTopic)
    await relay.subscribe(responseTopic)
    await ctx.sendRequest(pairingTopic, METHOD, request, { id, ttl: expiryTimestamp - ctx.now(), awaitResponse: false })
    const fallback = await proposals.propose(
      {
        pairingTopic,
        keys,
        requiredNamespaces: {},
        optionalNamespaces: {
          eip155: {
            chains,
            methods: [...new Set(['personal_sign', ...methods])],
            events: parameters.events ?? DEFAULT_EVENTS,
          },
        },
        sessionProperties: parameters.sessionProperties,
        expiryTimestamp,
        fallbackFor: id,
      },
      onExpire,
    )
    auths.set(String(id), { ...auths.get(String(id))!, fallbackId: fallback.id })
    fallback.approval.then(
      (session) => finish(id, { result: { session } }),
      (error: Error) => finish(id, { error }),
    )
    const onAbort = () => {
      const reason = signal?.reason instanceof Error ? signal.reason : new PairingAbortedError()
      finish(id, { error: reason })
      void proposals.drop(fallback.id, reason)
      void pairings.remove(pairingTopic)
    }
    if (signal?.aborted) onAbort()
    else signal?.addEventListener('abort', onAbort, { once: true })
    const link = formatPairingUri({ topic: pairingTopic, version: 2, relay: { protocol: 'irn' }, symKey, expiryTimestamp, methods: [METHOD] })
    return { uri: link, id, pairingTopic, response: () => response }
  }

  /** Dapp: the key of a response topic, from the type 1 envelope's sender key. */
  function open(topic: string, envelope: string): string | undefined {
    // Only a response topic of ours has no key of its own: its key comes with each envelope.
    const record = auths.values().find((auth) => auth.responseTopic === topic)
    if (!record?.privateKey) return undefined
    const { senderPublicKey } = decodeEnvelope(envelope)
    if (!senderPublicKey) return undefined
    return decrypt({ symKey: deriveSymKey(record.privateKey, senderPublicKey), envelope })
  }

  /** Dapp: an answer to a one-click request (on its response topic, or an error on the pairing). */
  async function onResponse(topic: string, response: JsonRpcResponse): Promise<boolean> {
    const record = auths.get(String(response.id))
    if (record?.role !== 'dapp' || (topic !== record.responseTopic && topic !== record.pairingTopic)) return false
    if (isErrorResponse(response)) {
      // A wallet without the method says so; its answer to the fallback proposal settles it.
      if (response.error.code === SdkErrors.methodUnsupported.code) {
        auths.set(String(record.id), { ...record, responseTopic: undefined })
        if (record.responseTopic) await relay.unsubscribe(record.responseTopic)
        return true
      }
      if (record.fallbackId !== undefined) await proposals.drop(record.fallbackId, new PeerError(response.error))
      finish(record.id, { error: new PeerError(response.error) })
      return true
    }
    const parsed = parse(authenticateResult, response.result)
    if (!parsed.ok) {
      ctx.logger.warn(`WalletConnect: dropped a malformed ${METHOD} answer (${parsed.issue.path} ${parsed.issue.message})`)
      return true
    }
    const { cacaos, responder } = parsed.value
    let namespaces: SessionNamespaces
    try {
      namespaces = namespacesFromCacaos(cacaos as Cacao[])
    } catch (error) {
      ctx.logger.warn(`WalletConnect: dropped a ${METHOD} answer with an unreadable CACAO`, error)
      return true
    }
    const symKey = deriveSymKey(record.privateKey!, responder.publicKey)
    const sessionTopic = topicOf(symKey)
    const peer = { publicKey: responder.publicKey, metadata: toMetadata(responder.metadata) }
    const session: SessionRecord = {
      topic: sessionTopic,
      symKey,
      pairingTopic: record.pairingTopic,
      relay: { protocol: 'irn' },
      expiry: ctx.now() + SEVEN_DAYS,
      acknowledged: true,
      controller: peer.publicKey,
      namespaces,
      requiredNamespaces: {},
      optionalNamespaces: {},
      self: record.request.requester,
      peer,
    }
    sessions.set(sessionTopic, session)
    await relay.subscribe(sessionTopic)
    pairings.activate(record.pairingTopic, peer.metadata)
    // The fallback proposal will not be answered now; it must not settle `response()` either.
    if (record.fallbackId !== undefined) ctx.proposals.delete(String(record.fallbackId))
    const view = toSession(session)
    finish(record.id, { result: { session: view, cacaos: cacaos as Cacao[] } })
    if (record.fallbackId !== undefined) proposals.settleApproval(record.fallbackId, new ExpiredError('Fallback proposal'))
    ctx.events.emit('session_connect', { session: view })
    return true
  }

  /** Wallet: a one-click request on a pairing we hold. */
  async function onRequest(topic: string, id: number, input: unknown) {
    if (!ctx.pairings.get(topic)) return
    const checked = parse(authenticateParams, input)
    if (!checked.ok) return ctx.logger.warn(`WalletConnect: dropped ${METHOD} on ${topic}: ${checked.issue.path} ${checked.issue.message}`)
    const params = checked.value
    // Without a listener this wallet cannot sign; the dapp waits for the fallback proposal instead.
    if (!ctx.events.listenerCount('session_authenticate')) return ctx.sendError(topic, id, METHOD, SdkErrors.methodUnsupported)
    if (params.expiryTimestamp < ctx.now()) return
    const request: AuthenticateRequest = {
      authPayload: params.authPayload,
      requester: { publicKey: params.requester.publicKey, metadata: toMetadata(params.requester.metadata) },
      expiryTimestamp: params.expiryTimestamp,
    }
    auths.set(String(id), { id, role: 'wallet', pairingTopic: topic, request })
    ctx.events.emit('session_authenticate', { id, topic, params: request })
  }

  function requireWalletRequest(id: number): AuthRecord {
    const record = auths.get(String(id))
    if (record?.role !== 'wallet') throw new ProposalNotFoundError(`id ${id}`)
    return record
  }

  /** Seals the wallet's answer for the dapp: a fresh key pair, type 1 so the dapp can derive the key. */
  function sealFor(record: AuthRecord) {
    const keys = generateKeyPair()
    const symKey = deriveSymKey(keys.privateKey, record.request.requester.publicKey)
    return { keys, symKey, responseTopic: responseTopicOf(record.request.requester.publicKey) }
  }

  async function approveAuthenticate({ id, auths: cacaos }: { id: number; auths: Cacao[] }): Promise<{ session: Session | undefined }> {
    const record = requireWalletRequest(id)
    if (record.request.expiryTimestamp <= ctx.now()) throw new ExpiredError('Sign-in request')
    if (!cacaos.length) throw new InvalidAuthenticateParametersError('at least one CACAO is needed')
    const namespaces = namespacesFromCacaos(cacaos)
    const { keys, symKey, responseTopic } = sealFor(record)
    const topic = topicOf(symKey)
    const self = { publicKey: keys.publicKey, metadata: ctx.metadata }
    const session: SessionRecord = {
      topic,
      symKey,
      pairingTopic: record.pairingTopic,
      relay: { protocol: 'irn' },
      expiry: ctx.now() + SEVEN_DAYS,
      acknowledged: true,
      controller: keys.publicKey,
      namespaces,
      requiredNamespaces: {},
      optionalNamespaces: {},
      self,
      peer: record.request.requester,
    }
    sessions.set(topic, session)
    await relay.subscribe(topic)
    auths.delete(String(id))
    await ctx.sendResult(responseTopic, id, METHOD, { cacaos, responder: self }, { symKey, senderPublicKey: keys.publicKey })
    pairings.activate(record.pairingTopic, record.request.requester.metadata)
    return { session: toSession(session) }
  }

  async function rejectAuthenticate({ id, reason = SdkErrors.userRejected }: { id: number; reason?: JsonRpcErrorObject | undefined }) {
    const record = requireWalletRequest(id)
    auths.delete(String(id))
    const { keys, symKey, responseTopic } = sealFor(record)
    await ctx.sendError(responseTopic, id, METHOD, reason, RPC[METHOD]!.reject, { symKey, senderPublicKey: keys.publicKey })
  }

  async function expire() {
    const t = ctx.now()
    for (const record of auths.values())
      if (record.request.expiryTimestamp <= t) {
        if (record.role === 'dapp') finish(record.id, { error: new ExpiredError('Sign-in request') })
        else auths.delete(String(record.id))
      }
  }

  return { authenticate, open, onResponse, onRequest, approveAuthenticate, rejectAuthenticate, expire }
}
