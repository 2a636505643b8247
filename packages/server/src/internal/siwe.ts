import { createPublicClient, getAddress, http, isAddress, type PublicClient } from 'viem'
import { parseSiweMessage, type SiweMessage } from 'viem/siwe'

/** The pre-session cookie naming the browser a SIWE nonce was issued to; its attributes are `cookieAttributes`. */
export const SIWE_COOKIE = '__Host-latchkey_siwe'

/**
 * How long a nonce may be used, and how far ahead of the server's clock a message's issued-at may
 * be. Freshness comes from the nonce; the skew only refuses messages claiming to come from the
 * future beyond a browser's clock drift.
 */
export const SIWE_TIMES = { nonceSeconds: 600, issuedAtSkewSeconds: 300 } as const

/** A chain whose signatures the backend verifies: EOA, EIP-1271 and EIP-6492 through its RPC. */
export type SiweChain = { readonly id: number; readonly rpcUrl: string }

/** An EIP-4361 message with every required field present and well formed. */
export type SiweFields = SiweMessage & { issuedAt: Date }

/** What the SIWE routes check against: allowed domains and uri origins, a client per chain. @internal */
export type SiweConfig = {
  domains: ReadonlySet<string>
  uriOrigins: ReadonlySet<string>
  clients: ReadonlyMap<number, PublicClient>
}

/**
 * The SIWE checks' configuration: `domains` (host[:port]) default to the hosts of
 * `allowedOrigins`; a message's uri may have one of `allowedOrigins` or the https origin of a domain.
 *
 * @internal
 * @example
 * const siwe = createSiweConfig({ allowedOrigins: ['http://localhost:5173'], chains: [{ id: 31337, rpcUrl }] })
 */
export function createSiweConfig(options: {
  allowedOrigins: readonly string[]
  siweDomains?: readonly string[] | undefined
  chains?: readonly SiweChain[] | undefined
}): SiweConfig {
  const domains = options.siweDomains ?? options.allowedOrigins.map((origin) => new URL(origin).host)
  return {
    domains: new Set(domains.map((domain) => domain.toLowerCase())),
    uriOrigins: new Set([
      ...options.allowedOrigins.map((origin) => new URL(origin).origin),
      ...(options.siweDomains ?? []).map((domain) => new URL(`https://${domain}`).origin),
    ]),
    clients: new Map((options.chains ?? []).map((chain) => [chain.id, createPublicClient({ transport: http(chain.rpcUrl) }) as PublicClient])),
  }
}

/**
 * `text` read as an EIP-4361 message (viem's parseSiweMessage), or undefined when a required
 * field is missing or malformed, or when a line of it is not one the parser read: what the
 * backend acts on must be exactly what the wallet showed.
 *
 * @internal
 * @example
 * const fields = readSiweMessage(message)
 */
export function readSiweMessage(text: string): SiweFields | undefined {
  const fields = parseSiweMessage(text)
  const { address, chainId, domain, issuedAt, nonce, uri, version } = fields
  if (!address || !isAddress(address) || chainId === undefined || !domain || !issuedAt || !nonce || !uri || version !== '1') return undefined
  if ([issuedAt, fields.expirationTime, fields.notBefore].some((date) => date !== undefined && Number.isNaN(date.getTime()))) return undefined
  if (!URL.canParse(uri)) return undefined
  // The parser skips lines it does not expect (a field out of order, text after the last field):
  // every line must be one it read.
  // The header, the address and a blank line; the statement's line, if any; a blank line.
  const lines =
    4 +
    (fields.statement !== undefined ? 1 : 0) +
    5 +
    (fields.expirationTime ? 1 : 0) +
    (fields.notBefore ? 1 : 0) +
    (fields.requestId !== undefined ? 1 : 0) +
    (fields.resources ? 1 + fields.resources.length : 0)
  if (text.split('\n').length !== lines) return undefined
  return { ...fields, address: getAddress(address), chainId, domain, issuedAt, nonce, uri, version }
}
