import { InvalidPairingUriError, PairingExpiredError } from './errors.js'

/** What a WalletConnect v2 pairing URI carries. */
export type PairingUri = {
  topic: string
  version: 2
  relay: { protocol: string; data?: string | undefined }
  symKey: string
  /** Unix seconds after which the pairing is void. */
  expiryTimestamp: number
  /** Methods the pairing is for, when the URI names them. */
  methods?: readonly string[] | undefined
}

const HEX_32 = /^[0-9a-f]{64}$/

/**
 * Formats a pairing URI: `wc:{topic}@2?relay-protocol=irn&symKey=…&expiryTimestamp=…`.
 *
 * @example
 * const uri = formatPairingUri({ topic, version: 2, relay: { protocol: 'irn' }, symKey, expiryTimestamp })
 */
export function formatPairingUri(pairing: PairingUri): string {
  const query = new URLSearchParams({ 'relay-protocol': pairing.relay.protocol })
  if (pairing.relay.data) query.set('relay-data', pairing.relay.data)
  query.set('symKey', pairing.symKey)
  query.set('expiryTimestamp', String(pairing.expiryTimestamp))
  if (pairing.methods?.length) query.set('methods', pairing.methods.join(','))
  return `wc:${pairing.topic}@2?${query.toString()}`
}

/**
 * Parses and validates a pairing URI. Pass `now` (unix seconds) to reject an expired one.
 *
 * @example
 * const { topic, symKey } = parsePairingUri(scannedText, { now: Math.floor(Date.now() / 1000) })
 */
export function parsePairingUri(uri: string, options: { now?: number | undefined } = {}): PairingUri {
  if (typeof uri !== 'string') throw new InvalidPairingUriError('the URI must be a string')
  const match = /^wc:([^@?]+)@(\d+)\?(.*)$/s.exec(uri.trim())
  if (!match) throw new InvalidPairingUriError('expected wc:{topic}@{version}?{parameters}')
  const [, topic = '', version, rest = ''] = match
  if (version !== '2') throw new InvalidPairingUriError(`version ${version} is not supported; only WalletConnect v2 is`)
  if (!HEX_32.test(topic)) throw new InvalidPairingUriError('the topic must be 32 bytes of lowercase hex')
  const query = new URLSearchParams(rest)
  const protocol = query.get('relay-protocol')
  if (!protocol) throw new InvalidPairingUriError('relay-protocol is missing')
  const symKey = query.get('symKey') ?? ''
  if (!HEX_32.test(symKey)) throw new InvalidPairingUriError('symKey must be 32 bytes of lowercase hex')
  const expiry = query.get('expiryTimestamp')
  if (expiry === null || !/^\d{1,12}$/.test(expiry)) throw new InvalidPairingUriError('expiryTimestamp must be a whole number of seconds')
  const expiryTimestamp = Number(expiry)
  if (options.now !== undefined && expiryTimestamp <= options.now)
    throw new PairingExpiredError(`it expired at ${new Date(expiryTimestamp * 1000).toISOString()}`)
  const data = query.get('relay-data') ?? undefined
  const methods = query.get('methods')
  return {
    topic,
    version: 2,
    relay: data === undefined ? { protocol } : { protocol, data },
    symKey,
    expiryTimestamp,
    ...(methods ? { methods: methods.split(',').filter(Boolean) } : {}),
  }
}
