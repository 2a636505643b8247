import { InvalidNamespacesError } from './errors.js'

/*
 * Namespaces per CAIP-2 (chain ids `namespace:reference`) and CAIP-10 (accounts
 * `namespace:reference:address`). A proposal asks for chains, methods and events; the wallet
 * answers with session namespaces that name the accounts.
 */

/** What a dapp asks for, per namespace (`eip155`) or per chain (`eip155:1`). */
export type ProposalNamespace = {
  chains?: string[] | undefined
  methods: string[]
  events: string[]
  rpcMap?: Record<string, string> | undefined
}

/** What a wallet grants. */
export type SessionNamespace = {
  accounts: string[]
  chains?: string[] | undefined
  methods: string[]
  events: string[]
  defaultChain?: string | undefined
  rpcMap?: Record<string, string> | undefined
}

export type ProposalNamespaces = Record<string, ProposalNamespace>
export type SessionNamespaces = Record<string, SessionNamespace>

const CAIP2 = /^[-a-z0-9]{3,8}:[-_a-zA-Z0-9]{1,32}$/
const CAIP10 = /^([-a-z0-9]{3,8}):([-_a-zA-Z0-9]{1,32}):([-.%a-zA-Z0-9]{1,128})$/
const NAMESPACE = /^[-a-z0-9]{3,8}$/

export function isChainId(value: unknown): value is string {
  return typeof value === 'string' && CAIP2.test(value)
}

/**
 * Splits a CAIP-10 account id.
 *
 * @example
 * parseAccountId('eip155:1:0xab…') // { chainId: 'eip155:1', address: '0xab…' }
 */
export function parseAccountId(account: string): { namespace: string; chainId: string; address: string } {
  const match = CAIP10.exec(account)
  if (!match) throw new InvalidNamespacesError(`${JSON.stringify(account)} is not a CAIP-10 account id`)
  const [, namespace = '', reference = '', address = ''] = match
  return { namespace, chainId: `${namespace}:${reference}`, address }
}

/** The namespace a key names: `eip155` for both `eip155` and `eip155:1`. */
export function namespaceOf(key: string): string {
  return key.split(':')[0] ?? key
}

/** Every chain a session namespace covers: its chains and the chains of its accounts. */
export function chainsOf(namespace: SessionNamespace): string[] {
  const chains = new Set(namespace.chains ?? [])
  for (const account of namespace.accounts) chains.add(parseAccountId(account).chainId)
  return [...chains]
}

/** Chains a proposal namespace asks for: its `chains`, or the key itself when it names one. */
export function requestedChains(key: string, namespace: ProposalNamespace): string[] {
  if (namespace.chains?.length) return namespace.chains
  return isChainId(key) ? [key] : []
}

function strings(value: unknown, what: string) {
  if (!Array.isArray(value) || value.some((item) => typeof item !== 'string')) throw new InvalidNamespacesError(`${what} must be an array of strings`)
}

/** Throws InvalidNamespacesError unless every key, chain, method and event list is well formed. */
export function assertProposalNamespaces(namespaces: unknown): asserts namespaces is ProposalNamespaces {
  if (typeof namespaces !== 'object' || namespaces === null || Array.isArray(namespaces)) throw new InvalidNamespacesError('namespaces must be an object')
  for (const [key, value] of Object.entries(namespaces as Record<string, ProposalNamespace>)) {
    if (!NAMESPACE.test(key) && !isChainId(key)) throw new InvalidNamespacesError(`${key} is not a namespace or CAIP-2 chain id`)
    if (value.chains !== undefined) {
      strings(value.chains, `${key}.chains`)
      for (const chain of value.chains)
        if (!isChainId(chain) || namespaceOf(chain) !== namespaceOf(key))
          throw new InvalidNamespacesError(`${key}.chains: ${chain} is not a chain of ${namespaceOf(key)}`)
    } else if (!isChainId(key)) throw new InvalidNamespacesError(`${key} names no chains`)
    strings(value.methods, `${key}.methods`)
    strings(value.events, `${key}.events`)
  }
}

/** Throws InvalidNamespacesError unless the session namespaces are well formed. */
export function assertSessionNamespaces(namespaces: unknown): asserts namespaces is SessionNamespaces {
  if (typeof namespaces !== 'object' || namespaces === null || Array.isArray(namespaces)) throw new InvalidNamespacesError('namespaces must be an object')
  const entries = Object.entries(namespaces as Record<string, SessionNamespace>)
  if (!entries.length) throw new InvalidNamespacesError('a session needs at least one namespace')
  for (const [key, value] of entries) {
    if (!NAMESPACE.test(key) && !isChainId(key)) throw new InvalidNamespacesError(`${key} is not a namespace or CAIP-2 chain id`)
    strings(value.accounts, `${key}.accounts`)
    if (!value.accounts.length) throw new InvalidNamespacesError(`${key} grants no accounts`)
    for (const account of value.accounts)
      if (parseAccountId(account).namespace !== namespaceOf(key)) throw new InvalidNamespacesError(`${account} is not in ${key}`)
    if (value.chains !== undefined) {
      strings(value.chains, `${key}.chains`)
      for (const chain of value.chains) if (!isChainId(chain)) throw new InvalidNamespacesError(`${key}.chains: ${chain} is not CAIP-2`)
    }
    strings(value.methods, `${key}.methods`)
    strings(value.events, `${key}.events`)
    if (value.defaultChain !== undefined && !chainsOf(value).includes(value.defaultChain))
      throw new InvalidNamespacesError(`${key}.defaultChain ${value.defaultChain} is not one of its chains`)
  }
}

/**
 * Throws unless the session grants everything the required namespaces ask for: each namespace,
 * each chain, each method and each event.
 */
export function assertConforms(session: SessionNamespaces, required: ProposalNamespaces) {
  for (const [key, asked] of Object.entries(required)) {
    const granted = Object.entries(session)
      .filter(([name]) => namespaceOf(name) === namespaceOf(key))
      .map(([, value]) => value)
    if (!granted.length) throw new InvalidNamespacesError(`required namespace ${key} was not granted`)
    const chains = new Set(granted.flatMap(chainsOf))
    const methods = new Set(granted.flatMap((value) => value.methods))
    const events = new Set(granted.flatMap((value) => value.events))
    for (const chain of requestedChains(key, asked)) if (!chains.has(chain)) throw new InvalidNamespacesError(`required chain ${chain} was not granted`)
    for (const method of asked.methods) if (!methods.has(method)) throw new InvalidNamespacesError(`required method ${method} was not granted`)
    for (const event of asked.events) if (!events.has(event)) throw new InvalidNamespacesError(`required event ${event} was not granted`)
  }
}

export type SupportedNamespace = { chains: string[]; methods: string[]; events: string[]; accounts: string[] }

/**
 * For wallets: the session namespaces to approve, the intersection of what the proposal asks for
 * (required and optional) and what the wallet supports. Accounts are kept only on granted chains.
 *
 * @example
 * const namespaces = buildApprovedNamespaces({
 *   proposal: proposal.params,
 *   supported: { eip155: { chains: ['eip155:1'], methods: ['personal_sign'], events: ['chainChanged'], accounts: ['eip155:1:0x…'] } },
 * })
 */
export function buildApprovedNamespaces(parameters: {
  proposal: { requiredNamespaces: ProposalNamespaces; optionalNamespaces?: ProposalNamespaces | undefined }
  supported: Record<string, SupportedNamespace>
}): SessionNamespaces {
  const { proposal, supported } = parameters
  const approved: SessionNamespaces = {}
  const asked = [...Object.entries(proposal.requiredNamespaces), ...Object.entries(proposal.optionalNamespaces ?? {})]
  for (const [name, offer] of Object.entries(supported)) {
    const wanted = asked.filter(([key]) => namespaceOf(key) === name)
    if (!wanted.length) continue
    const chains = offer.chains.filter((chain) => wanted.some(([key, value]) => requestedChains(key, value).includes(chain)))
    if (!chains.length) continue
    const methods = offer.methods.filter((method) => wanted.some(([, value]) => value.methods.includes(method)))
    const events = offer.events.filter((event) => wanted.some(([, value]) => value.events.includes(event)))
    approved[name] = {
      chains,
      methods,
      events,
      accounts: offer.accounts.filter((account) => chains.includes(parseAccountId(account).chainId)),
    }
  }
  assertConforms(approved, proposal.requiredNamespaces)
  return approved
}
