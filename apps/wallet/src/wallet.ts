import {
  type AuthenticateRequest,
  buildApprovedNamespaces,
  type Cacao,
  chainsOf,
  createSignClient,
  type JsonRpcErrorObject,
  type KeyValueStorage,
  type PendingRequest,
  type ProposalParams,
  SdkErrors,
  type Session,
  type SignClient,
  type SignClientEvents,
  type WebSocketConstructor,
} from '@latchkey/walletconnect'
import { createCacao, formatAuthMessage, populateAuthPayload } from '@latchkey/walletconnect/cacao'
import { ed25519 } from '@noble/curves/ed25519.js'
import { sha256 } from '@noble/hashes/sha2.js'
import { concatBytes, hexToBytes, utf8ToBytes } from '@noble/hashes/utils.js'
import { base58 } from '@scure/base'
import { type Address, createWalletClient, defineChain, type Hex, http, isAddressEqual, isHex, type TransactionRequest } from 'viem'
import { type LocalAccount, privateKeyToAccount } from 'viem/accounts'
import { CALLS_METHODS, createReferenceWalletCalls, SILENT_CALLS_METHODS } from './calls.js'

/** A chain the wallet can sign and send on. */
export type WalletChain = { readonly id: number; readonly name: string; readonly rpcUrl: string }

export type WalletOptions = {
  relayUrl: string
  chains: readonly [WalletChain, ...WalletChain[]]
  /** The key the wallet signs with (the reference wallet uses anvil's test key #1). */
  privateKey: Hex
  /** More keys the user can switch to in the "Account" control. */
  otherKeys?: readonly Hex[] | undefined
  /** Default: in memory. The page passes `localStorage`, so pairings and sessions survive a reload. */
  storage?: KeyValueStorage | undefined
  /** In Node 20, `ws`'s WebSocket; browsers have their own. */
  WebSocket?: WebSocketConstructor | undefined
  /** Solana clusters (CAIP-2) the wallet offers beside eip155. Default: mainnet-beta. */
  solanaChains?: readonly string[] | undefined
}

/** Solana mainnet-beta, by its genesis hash (CAIP-30). */
export const SOLANA_MAINNET = 'solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp'
export const SOLANA_METHODS = ['solana_signMessage'] as const

/** A one-click sign-in waiting for the user: the SIWE message the wallet would sign on each chain. */
export type PendingAuthenticate = {
  readonly id: number
  readonly request: AuthenticateRequest
  readonly messages: readonly { readonly chainId: string; readonly message: string }[]
}

/** One line of the page's activity log. */
export type LogEntry = { readonly at: number; readonly text: string }

export type WalletState = {
  readonly address: Address
  /** Every account the wallet holds; `address` is the one in use. */
  readonly addresses: readonly Address[]
  /** The chain the user picked in the "Network" control. */
  readonly chainId: number
  readonly chains: readonly WalletChain[]
  readonly proposals: readonly ProposalParams[]
  /** Requests waiting for the user, oldest first. */
  readonly requests: readonly PendingRequest[]
  readonly sessions: readonly Session[]
  /** One-click sign-in requests (`wc_sessionAuthenticate`) waiting for the user. */
  readonly authenticates: readonly PendingAuthenticate[]
  /** The wallet's Solana account (base58 ed25519 public key). */
  readonly solanaAddress: string
  /** Newest first, at most 20. */
  readonly log: readonly LogEntry[]
}

export type Wallet = {
  getState(): WalletState
  subscribe(listener: () => void): () => void
  /** Pairs with a `wc:` URI; the dapp's proposal then arrives in `proposals`. */
  pair(uri: string): Promise<void>
  approve(proposalId: number): Promise<void>
  reject(proposalId: number): Promise<void>
  /** Signs the SIWE message of each chain of a one-click sign-in and answers with the CACAOs. */
  approveAuthenticate(id: number): Promise<void>
  rejectAuthenticate(id: number): Promise<void>
  /** Approves (signs, sends, switches) or rejects a pending request and answers the dapp. */
  answer(requestId: number, approve: boolean): Promise<void>
  /** Switches the wallet's network and tells every session that holds the chain (`chainChanged`). */
  setChain(chainId: number): Promise<void>
  /** Switches account: every session is updated to it and told (`accountsChanged`). */
  setAccount(address: Address): Promise<void>
  disconnect(topic: string): Promise<void>
  close(): void
}

/** What the wallet offers a dapp. */
export const WALLET_METHODS = [
  'personal_sign',
  'eth_sign',
  'eth_signTypedData',
  'eth_signTypedData_v4',
  'eth_sendTransaction',
  'eth_signTransaction',
  'wallet_switchEthereumChain',
  'eth_accounts',
  'eth_requestAccounts',
  'eth_chainId',
  ...CALLS_METHODS,
] as const
export const WALLET_EVENTS = ['chainChanged', 'accountsChanged'] as const

/** Answered at once: they reveal nothing the session did not already grant. */
const SILENT_METHODS = new Set<string>(['eth_accounts', 'eth_requestAccounts', 'eth_chainId', ...SILENT_CALLS_METHODS])

const CHAIN_KEY = 'latchkey.wallet.chainId'
const ACCOUNT_KEY = 'latchkey.wallet.account'

/** A request the wallet refuses, with the EIP-1193 / EIP-1474 code the dapp receives. */
export class WalletRequestError extends Error {
  override name = 'WalletRequestError'
  constructor(
    message: string,
    readonly code: number,
  ) {
    super(message)
  }
}

/**
 * The reference wallet's logic, apart from its page: our Sign client in the wallet role, an
 * account from a private key (viem), and the user's decisions as method calls.
 *
 * @example
 * const wallet = await createWallet({ relayUrl: 'ws://127.0.0.1:5555', chains, privateKey, storage: localStorage })
 * await wallet.pair(uri)
 * await wallet.approve(wallet.getState().proposals[0].id)
 */
export async function createWallet(options: WalletOptions): Promise<Wallet> {
  const accounts = [options.privateKey, ...(options.otherKeys ?? [])].map((key) => privateKeyToAccount(key))
  const storage = options.storage
  let account = accounts.find((candidate) => candidate.address === storage?.getItem(ACCOUNT_KEY)) ?? accounts[0]!
  const client: SignClient = await createSignClient({
    relayUrl: options.relayUrl,
    metadata: {
      name: 'Latchkey Wallet',
      description: 'The reference wallet of the Latchkey devnet',
      url: typeof location === 'undefined' ? 'http://localhost:5174' : location.origin,
      icons: [],
    },
    storage,
    storagePrefix: 'latchkey.wallet.wc',
    WebSocket: options.WebSocket,
  })
  const solanaChains = options.solanaChains ?? [SOLANA_MAINNET]
  // The Solana key comes from the EVM key, so one seed phrase in a real wallet, one key here.
  const solanaSecret = sha256(concatBytes(utf8ToBytes('latchkey solana'), hexToBytes(options.privateKey.slice(2))))
  const solanaAddress = base58.encode(ed25519.getPublicKey(solanaSecret))
  const stored = Number(storage?.getItem(CHAIN_KEY))
  let chainId = options.chains.some((chain) => chain.id === stored) ? stored : options.chains[0].id
  let log: LogEntry[] = []
  const listeners = new Set<() => void>()
  let state = snapshot()

  function snapshot(): WalletState {
    return {
      address: account.address,
      addresses: accounts.map((candidate) => candidate.address),
      chainId,
      chains: options.chains,
      proposals: client.proposals(),
      requests: client.pendingRequests().filter((request) => !SILENT_METHODS.has(request.params.request.method)),
      sessions: client.sessions(),
      authenticates: client.pendingAuthenticates().map(({ id, params }) => ({ id, request: params, messages: messagesOf(params) })),
      solanaAddress,
      log,
    }
  }

  function changed(entry?: string) {
    if (entry) log = [{ at: Date.now(), text: entry }, ...log].slice(0, 20)
    state = snapshot()
    for (const listener of listeners) listener()
  }

  const names: (keyof SignClientEvents)[] = [
    'session_proposal',
    'session_connect',
    'session_update',
    'session_extend',
    'session_expire',
    'proposal_expire',
    'session_request_expire',
    'pairing_delete',
    'pairing_expire',
  ]
  const calls = createReferenceWalletCalls({
    chains: options.chains,
    address: () => account.address,
    sendTransaction: (id, call) => walletClient(id).sendTransaction({ account, to: call.to ?? null, value: call.value, data: call.data } as TransactionRequest),
    storage,
  })

  const detach = names.map((name) => client.events.on(name, () => changed()))
  detach.push(
    client.events.on('session_request', (request) => {
      const { method, params } = request.params.request
      if (SILENT_METHODS.has(method)) return void answer(request.id, true).catch(() => undefined)
      // A malformed batch is refused before the user sees it; nothing is sent.
      if (method === 'wallet_sendCalls') {
        try {
          calls.check(params)
        } catch (error) {
          return void refuse(request, error)
        }
      }
      changed(`${peerName(request.topic)} asks for ${method}`)
    }),
    client.events.on('session_delete', ({ topic }) => changed(`${peerName(topic)} disconnected`)),
    client.events.on('session_authenticate', ({ params }) => changed(`${params.requester.metadata.name} asks you to sign in`)),
  )

  /** What this wallet can grant of a one-click request: its chains, its methods. */
  function narrowed(request: AuthenticateRequest) {
    return populateAuthPayload({
      authPayload: request.authPayload,
      chains: options.chains.map((item) => `eip155:${item.id}`),
      methods: [...WALLET_METHODS],
    })
  }

  function messagesOf(request: AuthenticateRequest) {
    try {
      const payload = narrowed(request)
      return payload.chains.map((chainId) => ({ chainId, message: formatAuthMessage({ payload, iss: `did:pkh:${chainId}:${account.address}` }) }))
    } catch {
      // Nothing this wallet can sign: shown without messages, and only "Reject" makes sense.
      return []
    }
  }

  function peerName(topic: string): string {
    return client.session(topic)?.peer.metadata.name ?? 'The dapp'
  }

  function chain(id: number): WalletChain {
    const found = options.chains.find((item) => item.id === id)
    if (!found) throw new WalletRequestError(`Chain ${id} is not one this wallet has`, 4902)
    return found
  }

  function walletClient(id: number) {
    const { name, rpcUrl } = chain(id)
    const viemChain = defineChain({ id, name, nativeCurrency: { name: 'Ether', symbol: 'ETH', decimals: 18 }, rpcUrls: { default: { http: [rpcUrl] } } })
    return createWalletClient({ account, chain: viemChain, transport: http(rpcUrl) })
  }

  function assertOurs(address: unknown) {
    if (typeof address !== 'string' || !isHex(address) || address.length !== 42 || !isAddressEqual(address, account.address))
      throw new WalletRequestError(`${String(address)} is not this wallet's address`, 4100)
  }

  /** Runs an approved request; the result goes back to the dapp as is. */
  async function run(request: PendingRequest): Promise<unknown> {
    const { method, params } = request.params.request
    const list = Array.isArray(params) ? (params as unknown[]) : []
    const requestChain = Number(request.params.chainId.split(':')[1])
    switch (method) {
      case 'eth_accounts':
      case 'eth_requestAccounts':
        return [account.address]
      case 'eth_chainId':
        return `0x${chainId.toString(16)}`
      case 'personal_sign': {
        assertOurs(list[1])
        return account.signMessage({ message: messageOf(list[0]) })
      }
      case 'eth_sign': {
        assertOurs(list[0])
        return account.signMessage({ message: messageOf(list[1]) })
      }
      case 'eth_signTypedData':
      case 'eth_signTypedData_v4': {
        assertOurs(list[0])
        const typed = typeof list[1] === 'string' ? JSON.parse(list[1]) : list[1]
        if (typeof typed !== 'object' || typed === null) throw new WalletRequestError('The typed data is not an object', -32602)
        return account.signTypedData(typed)
      }
      case 'eth_sendTransaction':
      case 'eth_signTransaction': {
        const tx = transactionOf(list[0])
        const client = walletClient(requestChain)
        if (method === 'eth_sendTransaction') return client.sendTransaction(tx)
        return client.signTransaction(await client.prepareTransactionRequest(tx))
      }
      case 'solana_signMessage': {
        const { message, pubkey } = (params ?? {}) as { message?: unknown; pubkey?: unknown }
        if (pubkey !== solanaAddress) throw new WalletRequestError(`${String(pubkey)} is not this wallet's Solana account`, 4100)
        if (typeof message !== 'string') throw new WalletRequestError('The message is not base58', -32602)
        let bytes: Uint8Array
        try {
          bytes = base58.decode(message)
        } catch {
          throw new WalletRequestError('The message is not base58', -32602)
        }
        return { signature: base58.encode(ed25519.sign(bytes, solanaSecret)) }
      }
      case 'wallet_switchEthereumChain': {
        const target = Number((list[0] as { chainId?: unknown } | undefined)?.chainId)
        chain(target)
        await setChain(target)
        return null
      }
      case 'wallet_sendCalls':
        return calls.send(calls.check(list))
      case 'wallet_getCallsStatus':
        return calls.getCallsStatus(list)
      case 'wallet_getCapabilities':
        return calls.getCapabilities(list)
      default:
        throw new WalletRequestError(`The wallet does not support ${method}`, 4200)
    }
  }

  function transactionOf(value: unknown): TransactionRequest & { account: LocalAccount } {
    if (typeof value !== 'object' || value === null) throw new WalletRequestError('The transaction is not an object', -32602)
    const tx = value as Record<string, unknown>
    if (tx['from'] !== undefined) assertOurs(tx['from'])
    const big = (key: string) => (tx[key] === undefined ? {} : { [key]: BigInt(tx[key] as string) })
    const hex = (key: string) => (tx[key] === undefined ? {} : { [key]: tx[key] as Hex })
    return {
      account,
      ...hex('to'),
      ...hex('data'),
      ...big('value'),
      ...big('gas'),
      ...big('gasPrice'),
      ...big('maxFeePerGas'),
      ...big('maxPriorityFeePerGas'),
      ...(tx['nonce'] === undefined ? {} : { nonce: Number(tx['nonce']) }),
    } as TransactionRequest & { account: LocalAccount }
  }

  async function respond(request: PendingRequest, outcome: { result: unknown } | { error: JsonRpcErrorObject }) {
    await client.respond({ topic: request.topic, response: { id: request.id, jsonrpc: '2.0', ...outcome } })
  }

  /** Answers with the error's code (EIP-1193 / EIP-5792 refusals carry one), else -32603. */
  async function refuse(request: PendingRequest, error: unknown) {
    const code = typeof (error as { code?: unknown }).code === 'number' ? (error as { code: number }).code : -32603
    const message = (error as { shortMessage?: string }).shortMessage ?? (error as Error).message
    await respond(request, { error: { code, message } }).catch(() => undefined)
    changed(`${request.params.request.method} failed: ${message}`)
  }

  async function answer(requestId: number, approve: boolean) {
    const request = client.pendingRequests().find((item) => item.id === requestId)
    if (!request) throw new WalletRequestError('That request is no longer pending', -32602)
    const { method } = request.params.request
    if (!approve) {
      await respond(request, { error: SdkErrors.userRejected })
      changed(`Rejected ${method}`)
      return
    }
    let result: unknown
    try {
      result = await run(request)
    } catch (error) {
      await refuse(request, error)
      throw error
    }
    await respond(request, { result })
    if (!SILENT_METHODS.has(method)) changed(`Approved ${method}`)
  }

  async function setChain(id: number) {
    chain(id)
    if (id === chainId) return
    chainId = id
    storage?.setItem(CHAIN_KEY, String(id))
    changed(`Switched to ${chain(id).name} (${id})`)
    const caip = `eip155:${id}`
    await Promise.all(
      client
        .sessions()
        .filter((session) => Object.values(session.namespaces).some((ns) => chainsOf(ns).includes(caip)))
        .map((session) => client.emit({ topic: session.topic, chainId: caip, event: { name: 'chainChanged', data: id } })),
    )
  }

  async function setAccount(address: Address) {
    const next = accounts.find((candidate) => isAddressEqual(candidate.address, address))
    if (!next) throw new WalletRequestError(`${address} is not an account of this wallet`, 4100)
    if (next === account) return
    account = next
    storage?.setItem(ACCOUNT_KEY, next.address)
    changed(`Switched to account ${next.address}`)
    // Each session now holds the new account on its chains, and hears of it.
    await Promise.all(
      client.sessions().map(async (session) => {
        const namespaces = Object.fromEntries(
          Object.entries(session.namespaces).map(([key, namespace]) => [
            key,
            key.split(':')[0] === 'eip155' ? { ...namespace, accounts: chainsOf(namespace).map((caip) => `${caip}:${next.address}`) } : namespace,
          ]),
        )
        await client.update({ topic: session.topic, namespaces })
        const evm = Object.entries(session.namespaces).find(([key]) => key.split(':')[0] === 'eip155')?.[1]
        if (!evm) return
        const first = chainsOf(evm)[0]!
        await client.emit({ topic: session.topic, chainId: first, event: { name: 'accountsChanged', data: [next.address] } })
      }),
    )
  }

  return {
    getState: () => state,
    subscribe(listener) {
      listeners.add(listener)
      return () => listeners.delete(listener)
    },
    async pair(uri) {
      await client.pair({ uri: uri.trim() })
      changed('Paired; waiting for the proposal')
    },
    async approve(proposalId) {
      const proposal = client.proposals().find((item) => item.id === proposalId)
      if (!proposal) throw new WalletRequestError('That proposal is no longer pending', -32602)
      const supported = options.chains.map((item) => `eip155:${item.id}`)
      // The wallet's current chain first: dapps take the first account's chain as the active one.
      supported.sort((a, b) => Number(b === `eip155:${chainId}`) - Number(a === `eip155:${chainId}`))
      const name = proposal.proposer.metadata.name
      let namespaces: ReturnType<typeof buildApprovedNamespaces>
      try {
        namespaces = buildApprovedNamespaces({
          proposal,
          supported: {
            eip155: {
              chains: supported,
              methods: [...WALLET_METHODS],
              events: [...WALLET_EVENTS],
              accounts: supported.map((caip) => `${caip}:${account.address}`),
            },
            solana: {
              chains: [...solanaChains],
              methods: [...SOLANA_METHODS],
              events: [],
              accounts: solanaChains.map((caip) => `${caip}:${solanaAddress}`),
            },
          },
        })
      } catch (cause) {
        // What the dapp requires and this wallet lacks, in the user's words.
        const required = Object.entries(proposal.requiredNamespaces).flatMap(([key, value]) => value.chains ?? [key])
        const missing = required.filter((chain) => !supported.includes(chain))
        const error = new WalletRequestError(
          missing.length
            ? `${name} requires chains this wallet does not have: ${missing.join(', ')}`
            : `${name} requires methods or events this wallet does not have`,
          5100,
        )
        error.cause = cause
        await client.reject({ id: proposalId, reason: SdkErrors.unsupportedChains })
        changed(`Rejected ${name}: ${error.message}`)
        throw error
      }
      const { acknowledged } = await client.approve({ id: proposalId, namespaces })
      changed(`Approved ${name}`)
      void acknowledged().then(
        () => changed(),
        () => changed(),
      )
    },
    async reject(proposalId) {
      const proposal = client.proposals().find((item) => item.id === proposalId)
      await client.reject({ id: proposalId, reason: SdkErrors.userRejected })
      changed(`Rejected ${proposal?.proposer.metadata.name ?? 'the proposal'}`)
    },
    async approveAuthenticate(id) {
      const pending = client.pendingAuthenticates().find((item) => item.id === id)
      if (!pending) throw new WalletRequestError('That sign-in request is no longer pending', -32602)
      const payload = narrowed(pending.params)
      const auths: Cacao[] = []
      for (const chainId of payload.chains) {
        const iss = `did:pkh:${chainId}:${account.address}`
        const signature = await account.signMessage({ message: formatAuthMessage({ payload, iss }) })
        auths.push(createCacao({ payload, iss, signature: { t: 'eip191', s: signature } }))
      }
      await client.approveAuthenticate({ id, auths })
      changed(`Signed in to ${pending.params.requester.metadata.name}`)
    },
    async rejectAuthenticate(id) {
      const pending = client.pendingAuthenticates().find((item) => item.id === id)
      await client.rejectAuthenticate({ id, reason: SdkErrors.userRejected })
      changed(`Refused to sign in to ${pending?.params.requester.metadata.name ?? 'the dapp'}`)
    },
    answer,
    setChain,
    setAccount,
    async disconnect(topic) {
      const name = peerName(topic)
      await client.disconnect({ topic, reason: SdkErrors.userDisconnected })
      changed(`Disconnected from ${name}`)
    },
    close() {
      for (const off of detach) off()
      listeners.clear()
      client.close()
    },
  }
}

/** personal_sign carries hex (raw bytes); some dapps send plain text. */
function messageOf(value: unknown): string | { raw: Hex } {
  if (typeof value !== 'string') throw new WalletRequestError('The message is not a string', -32602)
  return isHex(value) ? { raw: value } : value
}
