import { array, type Infer, literal, number, object, optional, record, type Schema, string, union, unknown } from './schema.js'
import type { Metadata } from './types.js'

/*
 * The schema of every message a peer sends us, by method (requests) and by what it answers
 * (responses). Handlers only ever see values that passed these.
 *
 * @internal
 */

const HEX_32 = /^[0-9a-f]{64}$/
const strings = array(string(), { max: 1000 })

export const metadata = object({
  name: string(),
  description: optional(string()),
  url: string(),
  icons: optional(array(string(), { max: 20 })),
  redirect: optional(object({ native: optional(string()), universal: optional(string()) })),
})

export const participant = object({ publicKey: string(HEX_32), metadata })

const proposalNamespace = object({ chains: optional(strings), methods: strings, events: strings, rpcMap: optional(record(string())) })
const sessionNamespace = object({
  accounts: strings,
  chains: optional(strings),
  methods: strings,
  events: strings,
  defaultChain: optional(string()),
  rpcMap: optional(record(string())),
})
const properties = record(string())

export const proposeParams = object({
  requiredNamespaces: optional(record(proposalNamespace)),
  optionalNamespaces: optional(record(proposalNamespace)),
  relays: optional(array(object({ protocol: string() }))),
  proposer: participant,
  expiryTimestamp: optional(number()),
  sessionProperties: optional(properties),
})

export const settleParams = object({
  relay: optional(object({ protocol: string() })),
  namespaces: record(sessionNamespace),
  controller: participant,
  expiry: number(),
  sessionProperties: optional(properties),
})

export const sessionRequestParams = object({
  request: object({ method: string(), params: unknown(), expiryTimestamp: optional(number()) }),
  chainId: string(),
})

export const sessionEventParams = object({ event: object({ name: string(), data: unknown() }), chainId: string() })
export const sessionUpdateParams = object({ namespaces: record(sessionNamespace) })
export const empty = unknown()

export const proposeResult = object({ relay: optional(object({ protocol: string() })), responderPublicKey: string(HEX_32) })

/** CAIP-122 fields, as they travel in `wc_sessionAuthenticate` and inside a CACAO. */
const authFields = {
  domain: string(),
  aud: string(),
  version: string(),
  nonce: string(),
  iat: string(),
  nbf: optional(string()),
  exp: optional(string()),
  statement: optional(string()),
  requestId: optional(string()),
  resources: optional(array(string(), { max: 100 })),
}

export const authenticateParams = object({
  authPayload: object({ type: optional(string()), chains: array(string(), { max: 100 }), ...authFields }),
  requester: participant,
  expiryTimestamp: number(),
})

export const cacao = object({
  h: object({ t: union(literal('caip122'), literal('eip4361')) }),
  p: object({ iss: string(), ...authFields }),
  s: object({ t: string(), s: string(), m: optional(string()) }),
})

export const authenticateResult = object({ cacaos: array(cacao, { max: 100 }), responder: participant })

/** Requests by method; a method not listed here is answered with "Unsupported wc_ method". */
export const requestSchemas: Record<string, Schema<unknown>> = {
  wc_sessionPropose: proposeParams,
  wc_sessionSettle: settleParams,
  wc_sessionRequest: sessionRequestParams,
  wc_sessionEvent: sessionEventParams,
  wc_sessionUpdate: sessionUpdateParams,
  wc_sessionExtend: empty,
  wc_sessionPing: empty,
  wc_sessionDelete: empty,
  wc_pairingPing: empty,
  wc_pairingDelete: empty,
  wc_sessionAuthenticate: authenticateParams,
}

/** Metadata as the rest of the client types it: a peer may leave out description and icons. */
export function toMetadata(value: Infer<typeof metadata>): Metadata {
  return {
    name: value.name,
    description: value.description ?? '',
    url: value.url,
    icons: value.icons ?? [],
    ...(value.redirect ? { redirect: value.redirect } : {}),
  }
}
