import { DEFAULT_EVENTS, DEFAULT_METHODS, MAX_PAIRING_ATTEMPTS, OPTIONAL_EVENTS, PROVIDER_REINIT_WAIT_MS } from '@latchkey/constants'
import { createEmitter } from './emitter.js'
import {
  ChainIdNotFoundError,
  ConnectionRejectedError,
  ConnectionResetError,
  ExpiredError,
  InvalidChainsError,
  MaxPairingAttemptsError,
  MethodNotGrantedError,
  NamespaceNotConfiguredError,
  NetworkSwitchingOnlyInWalletError,
  NetworkSwitchingThroughWalletError,
  NotConnectedError,
  PairingAbortedError,
  PeerError,
  ProviderNotInitializedError,
  RpcProviderNotFoundError,
  SignClientNotInitializedError,
  type WalletConnectError,
} from './errors.js'
import { chainsOf, namespaceOf, type ProposalNamespaces, parseAccountId, type SessionNamespace } from './namespaces.js'
import type { WebSocketConstructor } from './relayClient.js'
import { type AuthenticateParameters, type Cacao, createSignClient, type Metadata, type Session, type SignClient } from './signClient.js'
import type { KeyValueStorage } from './store.js'

/*
 * An EIP-1193 provider over a WalletConnect session, for dapps: what viem, ethers or wagmi talk
 * to. Signing methods go to the wallet; reads go to an RPC url (the app's, else the relay's
 * JSON-RPC endpoint when a project id is set). Chains in the session switch locally, others only
 * through the wallet.
 */

// SPEC §9, from the one module that holds it.
export { DEFAULT_EVENTS, DEFAULT_METHODS, MAX_PAIRING_ATTEMPTS, OPTIONAL_EVENTS, PROVIDER_REINIT_WAIT_MS as REINIT_WAIT_MS } from '@latchkey/constants'
export const OPTIONAL_METHODS = [
  'eth_accounts',
  'eth_requestAccounts',
  'eth_sendRawTransaction',
  'eth_sign',
  'eth_signTransaction',
  'eth_signTypedData',
  'eth_signTypedData_v3',
  'eth_signTypedData_v4',
  'eth_sendTransaction',
  'personal_sign',
  'wallet_switchEthereumChain',
  'wallet_addEthereumChain',
  'wallet_getPermissions',
  'wallet_requestPermissions',
  'wallet_watchAsset',
  'wallet_getCapabilities',
  'wallet_sendCalls',
  'wallet_getCallsStatus',
] as const

/** Methods that only a wallet may answer: never sent to an RPC url, even when not granted. */
const WALLET_ONLY = /^(personal_sign|eth_sign|eth_signTransaction|eth_signTypedData.*|eth_sendTransaction|wallet_.*)$/

export type EthereumProviderOptions = {
  relayUrl: string
  projectId?: string | undefined
  metadata: Metadata
  /** Chains the wallet must grant. With `optionalChains`, at least one chain in all. */
  chains: readonly number[]
  optionalChains?: readonly number[] | undefined
  methods?: readonly string[] | undefined
  optionalMethods?: readonly string[] | undefined
  events?: readonly string[] | undefined
  optionalEvents?: readonly string[] | undefined
  /**
   * RPC urls for reads: by eip155 chain id (`1`), or by CAIP-2 id for any namespace
   * (`'solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp'`). Without one, eip155 reads use the session's
   * `rpcMap`, then the relay's JSON-RPC endpoint when a project id is set.
   */
  rpcMap?: Readonly<Record<number | string, string>> | undefined
  /**
   * Namespaces besides eip155 to ask for (optional), such as
   * `{ solana: { chains: ['solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp'], methods: ['solana_signMessage'], events: [] } }`.
   */
  namespaces?: ProposalNamespaces | undefined
  /** Sent with the proposal; the wallet's answer is on `session.sessionProperties`. */
  sessionProperties?: Readonly<Record<string, string>> | undefined
  storage?: KeyValueStorage | undefined
  storagePrefix?: string | undefined
  WebSocket?: WebSocketConstructor | undefined
  /** Default 10. */
  maxPairingAttempts?: number | undefined
  /** Default 1000 ms. */
  reinitWaitMs?: number | undefined
  /** Read requests go through this; default `fetch`. */
  fetch?: typeof fetch | undefined
  /** Clock in unix ms, passed to the Sign client; tests move it to expire proposals. */
  now?: (() => number) | undefined
}

export type RequestArguments = { method: string; params?: unknown }

export type AuthenticateProviderParameters = Pick<
  AuthenticateParameters,
  'domain' | 'uri' | 'nonce' | 'statement' | 'resources' | 'exp' | 'nbf' | 'requestId' | 'expiry'
> & {
  signal?: AbortSignal | undefined
}

export type EthereumProviderEvents = {
  connect: { chainId: `0x${string}` }
  disconnect: WalletConnectError
  chainChanged: `0x${string}`
  accountsChanged: `0x${string}`[]
  message: { type: string; data: unknown }
  display_uri: string
  session_delete: { topic: string }
}

export type EthereumProvider = {
  /** Creates the Sign client and restores a stored session. Idempotent. */
  init(): Promise<void>
  /**
   * Pairs with a wallet: emits `display_uri` with a fresh URI per attempt. A proposal that
   * expires or is rejected starts a new attempt, up to `maxPairingAttempts`.
   */
  connect(parameters?: {
    chains?: readonly number[] | undefined
    optionalChains?: readonly number[] | undefined
    sessionProperties?: Readonly<Record<string, string>> | undefined
    signal?: AbortSignal | undefined
  }): Promise<Session>
  /**
   * One-click sign-in: pairs and asks for one signed SIWE message per chain in one approval
   * (`wc_sessionAuthenticate`). A wallet that does not know the method approves the fallback
   * proposal instead; one that refuses it or lets it expire gets a plain `connect()`. Either way
   * the result has a session, and `cacaos` only when the wallet signed in one step.
   */
  authenticate(parameters: AuthenticateProviderParameters): Promise<{ session: Session; cacaos?: Cacao[] | undefined }>
  request<result = unknown>(args: RequestArguments, chain?: string): Promise<result>
  disconnect(): Promise<void>
  /** Makes a session chain the current one, without asking the wallet. */
  setDefaultChain(chainId: number): void
  on<name extends keyof EthereumProviderEvents>(name: name, listener: (data: EthereumProviderEvents[name]) => void): void
  removeListener<name extends keyof EthereumProviderEvents>(name: name, listener: (data: EthereumProviderEvents[name]) => void): void
  readonly session: Session | undefined
  readonly accounts: readonly `0x${string}`[]
  readonly chainId: number
  readonly signClient: SignClient | undefined
  /** Closes the relay connection; the stored session stays for the next page load. */
  close(): void
}

const toHex = (chainId: number) => `0x${chainId.toString(16)}` as const

/**
 * @example
 * const provider = createEthereumProvider({ relayUrl: 'ws://127.0.0.1:5555', metadata, chains: [31337], storage: localStorage })
 * await provider.init()
 * provider.on('display_uri', showQr)
 * await provider.connect()
 * const [account] = await provider.request({ method: 'eth_accounts' })
 */
export function createEthereumProvider(options: EthereumProviderOptions): EthereumProvider {
  const emitter = createEmitter<EthereumProviderEvents>()
  const offs = new Map<unknown, () => void>()
  let client: SignClient | undefined
  let initialised = false
  let closed = false
  let session: Session | undefined
  let chainId = options.chains?.[0] ?? options.optionalChains?.[0] ?? 1
  let accounts: `0x${string}`[] = []
  let pending: AbortController | undefined
  let detach: (() => void)[] = []

  async function makeClient() {
    const next = await createSignClient({
      relayUrl: options.relayUrl,
      projectId: options.projectId,
      metadata: options.metadata,
      storage: options.storage,
      storagePrefix: options.storagePrefix,
      WebSocket: options.WebSocket,
      now: options.now,
    })
    detach = [
      next.events.on('session_event', ({ topic, params }) => {
        if (topic !== session?.topic) return
        if (params.event.name === 'chainChanged') {
          const id = Number(params.event.data)
          if (Number.isSafeInteger(id) && sessionChains().includes(id)) switchLocally(id)
        } else if (params.event.name === 'accountsChanged' && Array.isArray(params.event.data)) {
          const next = params.event.data.map((item) => (String(item).includes(':') ? parseAccountId(String(item)).address : String(item)))
          setAccounts(next as `0x${string}`[])
        }
      }),
      next.events.on('session_update', ({ topic }) => {
        if (topic !== session?.topic) return
        session = next.session(topic)
        if (!sessionChains().includes(chainId) && sessionChains()[0] !== undefined) switchLocally(sessionChains()[0]!)
        setAccounts(accountsOn(chainId))
      }),
      next.events.on('session_delete', ({ topic }) => topic === session?.topic && ended(topic)),
      next.events.on('session_expire', ({ topic }) => topic === session?.topic && ended(topic)),
    ]
    return next
  }

  function eip155(): SessionNamespace[] {
    return Object.entries(session?.namespaces ?? {})
      .filter(([key]) => namespaceOf(key) === 'eip155')
      .map(([, value]) => value)
  }

  function sessionChains(): number[] {
    return [...new Set(eip155().flatMap(chainsOf))].map((chain) => Number(chain.split(':')[1]))
  }

  function accountsOn(id: number): `0x${string}`[] {
    const addresses = eip155()
      .flatMap((ns) => ns.accounts)
      .map(parseAccountId)
      .filter((account) => account.chainId === `eip155:${id}`)
      .map((account) => account.address as `0x${string}`)
    return [...new Set(addresses)]
  }

  function granted(method: string): boolean {
    return grantedOn(`eip155:${chainId}`, method)
  }

  function grantedOn(chain: string, method: string): boolean {
    return Object.entries(session?.namespaces ?? {}).some(
      ([key, ns]) => namespaceOf(key) === namespaceOf(chain) && chainsOf(ns).includes(chain) && ns.methods.includes(method),
    )
  }

  function optionalEip155(chains: readonly number[], optionalChains: readonly number[]) {
    return {
      chains: [...new Set([...chains, ...optionalChains])].map((id) => `eip155:${id}`),
      methods: [...new Set([...(options.methods ?? DEFAULT_METHODS), ...(options.optionalMethods ?? OPTIONAL_METHODS)])],
      events: [...new Set([...(options.events ?? DEFAULT_EVENTS), ...(options.optionalEvents ?? OPTIONAL_EVENTS)])],
    }
  }

  function setAccounts(next: `0x${string}`[]) {
    if (next.join() === accounts.join()) return
    accounts = next
    emitter.emit('accountsChanged', next)
  }

  function switchLocally(id: number) {
    const changed = id !== chainId
    chainId = id
    if (changed) emitter.emit('chainChanged', toHex(id))
    setAccounts(accountsOn(id))
  }

  function adopt(next: Session, preferred: readonly number[]) {
    session = next
    const chains = sessionChains()
    // The wallet's defaultChain is where the user is; the dapp's order only breaks the tie.
    const byWallet = eip155()
      .map((ns) => ns.defaultChain)
      .find((chain) => chain !== undefined && chains.includes(Number(chain.split(':')[1])))
    chainId = byWallet ? Number(byWallet.split(':')[1]) : (preferred.find((id) => chains.includes(id)) ?? chains[0] ?? chainId)
    accounts = accountsOn(chainId)
  }

  function connected(next: Session, preferred: readonly number[]): Session {
    adopt(next, preferred)
    emitter.emit('connect', { chainId: toHex(chainId) })
    emitter.emit('accountsChanged', accounts)
    return next
  }

  /** One pairing attempt at a time: a newer one resets an older one; the caller's signal aborts it. */
  async function exclusive<result>(signal: AbortSignal | undefined, run: (signal: AbortSignal) => Promise<result>): Promise<result> {
    if (signal?.aborted) throw new PairingAbortedError()
    pending?.abort(new ConnectionResetError())
    const controller = new AbortController()
    pending = controller
    const onAbort = () => controller.abort(new PairingAbortedError())
    signal?.addEventListener('abort', onAbort, { once: true })
    try {
      return await run(controller.signal)
    } catch (error) {
      throw controller.signal.aborted ? controller.signal.reason : error
    } finally {
      signal?.removeEventListener('abort', onAbort)
      if (pending === controller) pending = undefined
    }
  }

  function ended(topic: string) {
    session = undefined
    accounts = []
    emitter.emit('session_delete', { topic })
    emitter.emit('disconnect', new NotConnectedError('the session ended'))
  }

  function requireClient(): SignClient {
    if (!initialised) throw new ProviderNotInitializedError()
    if (!client || closed) throw new SignClientNotInitializedError()
    return client
  }

  async function reinit() {
    for (const off of detach) off()
    client?.close()
    client = undefined
    client = await makeClient()
    await new Promise((resolve) => setTimeout(resolve, options.reinitWaitMs ?? PROVIDER_REINIT_WAIT_MS))
  }

  /** The RPC url for reads on a CAIP-2 chain (SPEC §7): the app's, the session's, then the relay's for eip155. */
  function rpcUrlFor(chain: string): string | undefined {
    const [namespace = '', reference = ''] = chain.split(':')
    const fromSession = Object.entries(session?.namespaces ?? {})
      .filter(([key]) => namespaceOf(key) === namespace)
      .map(([, ns]) => ns.rpcMap?.[reference] ?? ns.rpcMap?.[chain])
      .find((url) => url !== undefined)
    if (namespace !== 'eip155') return options.rpcMap?.[chain] ?? fromSession
    return (
      options.rpcMap?.[Number(reference)] ??
      options.rpcMap?.[chain] ??
      fromSession ??
      (options.projectId ? relayRpcUrl(options.relayUrl, Number(reference), options.projectId) : undefined)
    )
  }

  async function read(args: RequestArguments, chain: string): Promise<unknown> {
    const url = rpcUrlFor(chain)
    if (!url) throw new RpcProviderNotFoundError(chain)
    const response = await (options.fetch ?? fetch)(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ id: Date.now(), jsonrpc: '2.0', method: args.method, params: args.params ?? [] }),
    })
    const body = (await response.json()) as { result?: unknown; error?: { code: number; message: string } }
    if (body.error) throw new PeerError(body.error)
    return body.result
  }

  async function switchChain(target: number): Promise<null> {
    if (sessionChains().includes(target)) return switchLocally(target), null
    if (!granted('wallet_switchEthereumChain')) throw new NetworkSwitchingOnlyInWalletError(`eip155:${target} is not in the session`)
    await requireClient().request({
      topic: session!.topic,
      chainId: `eip155:${chainId}`,
      request: { method: 'wallet_switchEthereumChain', params: [{ chainId: toHex(target) }] },
    })
    // The wallet adds the chain with a session update before it answers.
    session = requireClient().session(session!.topic)
    if (!sessionChains().includes(target)) throw new NetworkSwitchingOnlyInWalletError(`the wallet did not add eip155:${target}`)
    switchLocally(target)
    return null
  }

  const self: EthereumProvider = {
    async init() {
      if (initialised) return
      initialised = true
      client = await makeClient()
      const restored = client.sessions().find((s) => Object.keys(s.namespaces).some((key) => namespaceOf(key) === 'eip155'))
      if (restored) adopt(restored, [...options.chains, ...(options.optionalChains ?? [])])
    },

    async connect(parameters = {}) {
      requireClient()
      const chains = parameters.chains ?? options.chains
      const optionalChains = parameters.optionalChains ?? options.optionalChains ?? []
      if (!Array.isArray(chains) || chains.some((id) => !Number.isSafeInteger(id) || id <= 0))
        throw new InvalidChainsError('chains must be a list of chain ids')
      // SPEC §5: a non-empty chains list, whatever optionalChains holds.
      if (!chains.length) throw new InvalidChainsError('chains must name at least one chain')
      const sessionProperties = parameters.sessionProperties ?? options.sessionProperties

      const required = chains.length
        ? {
            eip155: {
              chains: chains.map((id) => `eip155:${id}`),
              methods: [...(options.methods ?? DEFAULT_METHODS)],
              events: [...(options.events ?? DEFAULT_EVENTS)],
            },
          }
        : {}
      const optional = { ...options.namespaces, eip155: optionalEip155(chains, optionalChains) }
      return exclusive(parameters.signal, async (signal) => {
        const maxAttempts = options.maxPairingAttempts ?? MAX_PAIRING_ATTEMPTS
        for (let attempt = 1; attempt <= maxAttempts; attempt++) {
          signal.throwIfAborted()
          const { uri, approval } = await requireClient().connect({
            requiredNamespaces: required,
            optionalNamespaces: optional,
            signal,
            ...(sessionProperties ? { sessionProperties: { ...sessionProperties } } : {}),
          })
          emitter.emit('display_uri', uri)
          try {
            return connected(await approval(), [...chains, ...optionalChains])
          } catch (error) {
            if (signal.aborted) throw signal.reason
            if (error instanceof ExpiredError) continue
            if (error instanceof PeerError) {
              emitter.emit('message', { type: 'connection_rejected', data: new ConnectionRejectedError(error.message, error) })
              await reinit()
              continue
            }
            throw error
          }
        }
        throw new MaxPairingAttemptsError(`${maxAttempts} attempts`)
      })
    },

    async authenticate({ signal, ...fields }) {
      requireClient()
      const { chains, optionalChains = [] } = options
      if (!chains.length) throw new InvalidChainsError('chains must name at least one chain')
      const eip = optionalEip155(chains, optionalChains)
      const signed = await exclusive(signal, async (inner) => {
        const { uri, response } = await requireClient().authenticate({
          ...fields,
          ...eip,
          ...(options.sessionProperties ? { sessionProperties: { ...options.sessionProperties } } : {}),
          signal: inner,
        })
        emitter.emit('display_uri', uri)
        try {
          const { session: next, cacaos } = await response()
          return { session: connected(next, [...chains, ...optionalChains]), ...(cacaos ? { cacaos } : {}) }
        } catch (error) {
          // A refusal or silence: the wallet may still connect the plain way, then sign in with personal_sign.
          if (inner.aborted || !(error instanceof ExpiredError || error instanceof PeerError)) throw error
          return undefined
        }
      })
      return signed ?? { session: await self.connect(signal ? { signal } : {}) }
    },

    async request(args, chain) {
      if (!initialised) throw new ProviderNotInitializedError()
      if (chain !== undefined && !Object.keys(session?.namespaces ?? {}).some((key) => namespaceOf(key) === namespaceOf(chain)))
        throw new NamespaceNotConfiguredError(namespaceOf(chain))
      if (!session) throw new NotConnectedError()
      const client = requireClient()
      // Another namespace (or another eip155 chain named outright): routed to that chain as is.
      if (chain !== undefined && chain !== `eip155:${chainId}`) {
        if (grantedOn(chain, args.method))
          return (await client.request({ topic: session.topic, chainId: chain, request: { method: args.method, params: args.params ?? [] } })) as never
        if (namespaceOf(chain) === 'eip155' && WALLET_ONLY.test(args.method)) throw new MethodNotGrantedError(args.method, chain)
        return (await read(args, chain)) as never
      }
      switch (args.method) {
        case 'eth_accounts':
        case 'eth_requestAccounts':
          return accounts as never
        case 'eth_chainId':
          return toHex(chainId) as never
        case 'net_version':
          return String(chainId) as never
        case 'wallet_switchEthereumChain': {
          const [{ chainId: hex } = { chainId: '' }] = (args.params ?? []) as { chainId: string }[]
          return (await switchChain(Number(hex))) as never
        }
        case 'wallet_addEthereumChain': {
          const [{ chainId: hex } = { chainId: '' }] = (args.params ?? []) as { chainId: string }[]
          if (sessionChains().includes(Number(hex))) return (switchLocally(Number(hex)), null) as never
          if (!granted('wallet_addEthereumChain')) throw new NetworkSwitchingThroughWalletError(`eip155:${Number(hex)} is not in the session`)
        }
      }
      if (granted(args.method))
        return (await client.request({
          topic: session.topic,
          chainId: `eip155:${chainId}`,
          request: { method: args.method, params: args.params ?? [] },
        })) as never
      if (WALLET_ONLY.test(args.method)) throw new MethodNotGrantedError(args.method, `eip155:${chainId}`)
      return (await read(args, `eip155:${chainId}`)) as never
    },

    async disconnect() {
      const client = requireClient()
      pending?.abort(new PairingAbortedError())
      const topic = session?.topic
      session = undefined
      accounts = []
      if (topic) await client.disconnect({ topic }).catch(() => undefined)
      emitter.emit('disconnect', new NotConnectedError('disconnected by the user'))
    },

    setDefaultChain(id) {
      if (!sessionChains().includes(id)) throw new ChainIdNotFoundError(`eip155:${id} is not in the session`)
      switchLocally(id)
    },

    on(name, listener) {
      offs.set(listener, emitter.on(name, listener))
    },
    removeListener(_name, listener) {
      offs.get(listener)?.()
      offs.delete(listener)
    },
    get session() {
      return session
    },
    get accounts() {
      return accounts
    },
    get chainId() {
      return chainId
    },
    get signClient() {
      return client
    },
    close() {
      closed = true
      pending?.abort(new PairingAbortedError())
      for (const off of detach) off()
      client?.close()
    },
  }
  return self
}

/** The relay's JSON-RPC endpoint for a chain: `https://…/v1/?chainId=eip155:N&projectId=…`. */
export function relayRpcUrl(relayUrl: string, chainId: number, projectId: string): string {
  const url = new URL(relayUrl.replace(/^ws/, 'http'))
  url.pathname = '/v1/'
  url.search = new URLSearchParams({ chainId: `eip155:${chainId}`, projectId }).toString()
  return url.toString()
}
