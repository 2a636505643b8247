import { array, type Infer, number, object, optional, record, type Schema, string, unknown } from './schema.js'
import type { Metadata } from './types.js'

/*
 * The schema of every message a peer sends us, by method (requests) and by what it answers
 * (responses). Handlers only ever see values that passed these.
 *
 * @internal
 */

const HEX_32 = /^[0-9a-f]{64}$/

export const metadata = object({
  name: string(),
  description: optional(string()),
  url: string(),
  icons: optional(array(string(), { max: 20 })),
  redirect: optional(object({ native: optional(string()), universal: optional(string()) })),
})

export const participant = object({ publicKey: string(HEX_32), metadata })

// Namespaces are checked in full by namespaces.ts (assertProposalNamespaces, assertSessionNamespaces).
const namespaces = record(unknown())
const properties = record(string())

export const proposeParams = object({
  requiredNamespaces: optional(namespaces),
  optionalNamespaces: optional(namespaces),
  relays: optional(array(object({ protocol: string() }))),
  proposer: participant,
  expiryTimestamp: optional(number()),
  sessionProperties: optional(properties),
})

export const settleParams = object({
  relay: optional(object({ protocol: string() })),
  namespaces,
  controller: participant,
  expiry: number(),
  sessionProperties: optional(properties),
})

export const sessionRequestParams = object({
  request: object({ method: string(), params: unknown(), expiryTimestamp: optional(number()) }),
  chainId: string(),
})

export const sessionEventParams = object({ event: object({ name: string(), data: unknown() }), chainId: string() })
export const sessionUpdateParams = object({ namespaces })
export const empty = unknown()

export const proposeResult = object({ relay: optional(object({ protocol: string() })), responderPublicKey: string(HEX_32) })

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
  // Checked by sign/auth.ts, which loads with the first one-click request.
  wc_sessionAuthenticate: unknown(),
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
