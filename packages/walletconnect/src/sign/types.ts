import type { Emitter } from '../emitter.js'
import type { JsonRpcErrorObject, JsonRpcResponse } from '../jsonrpc.js'
import type { ProposalNamespaces, SessionNamespaces } from '../namespaces.js'
import type { RelayClient, WebSocketConstructor } from '../relayClient.js'
import type { KeyValueStorage } from '../store.js'
import type { AuthenticateParameters, AuthenticateRequest, AuthenticateResult, Cacao } from './authTypes.js'

/*
 * The public shapes of the Sign client, shared by its parts (pairing, proposal, session, request,
 * auth). `signClient.ts` re-exports them.
 */

export type Metadata = {
  name: string
  description: string
  url: string
  icons: string[]
  redirect?: { native?: string | undefined; universal?: string | undefined } | undefined
}

export type Pairing = {
  topic: string
  /** Unix seconds. */
  expiry: number
  /** True once a session was made through it. */
  active: boolean
  peerMetadata?: Metadata | undefined
  /** Methods the URI named (`wc_sessionAuthenticate` for a one-click pairing). */
  methods?: string[] | undefined
}

export type ProposalParams = {
  id: number
  requiredNamespaces: ProposalNamespaces
  optionalNamespaces: ProposalNamespaces
  relays: { protocol: string }[]
  proposer: { publicKey: string; metadata: Metadata }
  /** Unix seconds. */
  expiryTimestamp: number
  pairingTopic: string
  sessionProperties?: Record<string, string> | undefined
}

export type Session = {
  topic: string
  pairingTopic: string
  relay: { protocol: string }
  /** Unix seconds. */
  expiry: number
  /** True once the dapp confirmed the settlement. */
  acknowledged: boolean
  /** Public key of the side that may update the session: the wallet. */
  controller: string
  namespaces: SessionNamespaces
  requiredNamespaces: ProposalNamespaces
  optionalNamespaces: ProposalNamespaces
  sessionProperties?: Record<string, string> | undefined
  self: { publicKey: string; metadata: Metadata }
  peer: { publicKey: string; metadata: Metadata }
}

export type SessionRequestParams = {
  request: { method: string; params: unknown; expiryTimestamp?: number | undefined }
  chainId: string
}

/** A request the wallet received and has not answered yet. */
export type PendingRequest = { id: number; topic: string; params: SessionRequestParams }

export type SessionEventParams = { event: { name: string; data: unknown }; chainId: string }

export type SignClientEvents = {
  session_proposal: { id: number; params: ProposalParams }
  session_connect: { session: Session }
  session_request: PendingRequest
  session_event: { id: number; topic: string; params: SessionEventParams }
  session_update: { id: number; topic: string; params: { namespaces: SessionNamespaces } }
  session_extend: { id: number; topic: string }
  session_ping: { id: number; topic: string }
  session_delete: { id: number; topic: string }
  session_expire: { topic: string }
  proposal_expire: { id: number }
  session_request_expire: { id: number; topic: string }
  pairing_ping: { id: number; topic: string }
  pairing_delete: { id: number; topic: string }
  pairing_expire: { topic: string }
  /** A wallet's one-click sign-in request: sign `formatAuthMessage` per chain, then `approveAuthenticate`. */
  session_authenticate: { id: number; topic: string; params: AuthenticateRequest }
  /** Failures that are not any caller's: undecryptable messages, storage writes, relay trouble. */
  error: Error
}

export type SignClientOptions = {
  /** Ours (`ws://127.0.0.1:5555`) or the public one (`wss://relay.walletconnect.org`). */
  relayUrl: string
  /** Needed by the public relay; nothing is sent anywhere else. */
  projectId?: string | undefined
  metadata: Metadata
  /** Default: in memory. Pass `localStorage` to survive reloads. */
  storage?: KeyValueStorage | undefined
  /** Default `latchkey.wc`. Two clients in one storage need different prefixes. */
  storagePrefix?: string | undefined
  /** In Node 20, `ws`'s WebSocket; browsers have their own. */
  WebSocket?: WebSocketConstructor | undefined
  /** Clock in unix ms; tests move it to expire things. */
  now?: (() => number) | undefined
  /** Only for tests: a relay client to use instead of making one. */
  relay?: RelayClient | undefined
  /** Where dropped peer messages are reported. Default `console`. */
  logger?: { warn(message: string, ...details: unknown[]): void } | undefined
}

export type ConnectParameters = {
  requiredNamespaces?: ProposalNamespaces | undefined
  optionalNamespaces?: ProposalNamespaces | undefined
  sessionProperties?: Record<string, string> | undefined
  /** Aborting drops the proposal and its pairing; `approval()` rejects with the abort reason. */
  signal?: AbortSignal | undefined
}

export type SignClient = {
  readonly events: Emitter<SignClientEvents>
  /** The relay identity (did:key), stable across reloads. */
  readonly clientId: string
  readonly metadata: Metadata

  // Dapp
  connect(parameters: ConnectParameters): Promise<{ uri: string; id: number; pairingTopic: string; approval(): Promise<Session> }>
  request<result = unknown>(parameters: {
    topic: string
    chainId: string
    request: { method: string; params?: unknown }
    /** Seconds the wallet has to answer; 300 to 604 800. Default 300. */
    expiry?: number | undefined
  }): Promise<result>

  /**
   * One-click sign-in (CAIP-222): asks the wallet to sign a SIWE message per chain and, in the
   * same pairing, proposes a plain session as the fallback for wallets that do not answer it.
   */
  authenticate(parameters: AuthenticateParameters): Promise<{ uri: string; id: number; pairingTopic: string; response(): Promise<AuthenticateResult> }>

  // Wallet
  pair(parameters: { uri: string }): Promise<Pairing>
  approve(parameters: {
    id: number
    namespaces: SessionNamespaces
    sessionProperties?: Record<string, string> | undefined
  }): Promise<{ topic: string; acknowledged(): Promise<Session> }>
  reject(parameters: { id: number; reason?: JsonRpcErrorObject | undefined }): Promise<void>
  respond(parameters: { topic: string; response: JsonRpcResponse }): Promise<void>
  update(parameters: { topic: string; namespaces: SessionNamespaces }): Promise<void>
  emit(parameters: { topic: string; event: { name: string; data: unknown }; chainId: string }): Promise<void>
  /** Answers a one-click request with one CACAO per chain; the session starts at once. */
  approveAuthenticate(parameters: { id: number; auths: Cacao[] }): Promise<{ session: Session | undefined }>
  rejectAuthenticate(parameters: { id: number; reason?: JsonRpcErrorObject | undefined }): Promise<void>

  // Both
  extend(parameters: { topic: string }): Promise<void>
  ping(parameters: { topic: string }): Promise<void>
  /** Ends a session (or a pairing, given its topic) here and tells the peer. */
  disconnect(parameters: { topic: string; reason?: JsonRpcErrorObject | undefined }): Promise<void>

  sessions(): Session[]
  session(topic: string): Session | undefined
  pairings(): Pairing[]
  /** Proposals received and not yet answered (wallet). */
  proposals(): ProposalParams[]
  /** Requests received and not yet answered (wallet). */
  pendingRequests(): PendingRequest[]
  /** One-click requests received and not yet answered (wallet). */
  pendingAuthenticates(): { id: number; topic: string; params: AuthenticateRequest }[]
  /** Drops what has expired; runs by itself at start and every 30 seconds. */
  cleanup(): Promise<void>
  close(): void
}
