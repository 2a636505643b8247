import * as official from '@walletconnect/utils'
import { describe, expect, test } from 'vitest'
import { generateSymKey, topicOf } from './crypto.js'
import { InvalidPairingUriError, PairingExpiredError } from './errors.js'
import { formatPairingUri, parsePairingUri } from './uri.js'

const symKey = '5f0b'.repeat(16)
const topic = topicOf(symKey)

describe('pairing URI', () => {
  test('default: the documented shape', () => {
    expect(formatPairingUri({ topic, version: 2, relay: { protocol: 'irn' }, symKey, expiryTimestamp: 1_800_000_000 })).toBe(
      `wc:${topic}@2?relay-protocol=irn&symKey=${symKey}&expiryTimestamp=1800000000`,
    )
  })

  test('behavior: ours parses with the official client and theirs with ours', () => {
    const pairing = { topic, version: 2 as const, relay: { protocol: 'irn' }, symKey, expiryTimestamp: 1_800_000_000, methods: ['wc_sessionPropose'] }
    const theirs = official.parseUri(formatPairingUri(pairing))
    expect(theirs).toMatchObject({ topic, version: 2, symKey, expiryTimestamp: 1_800_000_000, relay: { protocol: 'irn' } })
    const key = generateSymKey()
    const officialUri = official.formatUri({
      protocol: 'wc',
      version: 2,
      topic: topicOf(key),
      symKey: key,
      relay: { protocol: 'irn' },
      expiryTimestamp: 1_900_000_000,
    })
    expect(parsePairingUri(officialUri)).toEqual({ topic: topicOf(key), version: 2, relay: { protocol: 'irn' }, symKey: key, expiryTimestamp: 1_900_000_000 })
  })

  test('behavior: relay data and methods round-trip', () => {
    const pairing = {
      topic,
      version: 2 as const,
      relay: { protocol: 'irn', data: 'abc' },
      symKey,
      expiryTimestamp: 1,
      methods: ['wc_sessionPropose', 'wc_authRequest'],
    }
    expect(parsePairingUri(formatPairingUri(pairing))).toEqual(pairing)
  })

  test('error: each malformed part is named', () => {
    const good = formatPairingUri({ topic, version: 2, relay: { protocol: 'irn' }, symKey, expiryTimestamp: 1_800_000_000 })
    const cases: [string, string][] = [
      ['https://example.com', 'expected wc:{topic}@{version}?{parameters}'],
      [good.replace('@2?', '@1?'), 'version 1 is not supported; only WalletConnect v2 is'],
      [good.replace(topic, 'xyz'), 'the topic must be 32 bytes of lowercase hex'],
      [good.replace('relay-protocol=irn&', ''), 'relay-protocol is missing'],
      [good.replace(symKey, 'abc'), 'symKey must be 32 bytes of lowercase hex'],
      [good.replace('1800000000', 'soon'), 'expiryTimestamp must be a whole number of seconds'],
    ]
    for (const [uri, details] of cases) {
      const error = (() => {
        try {
          parsePairingUri(uri)
          return undefined
        } catch (e) {
          return e
        }
      })()
      expect(error).toBeInstanceOf(InvalidPairingUriError)
      expect((error as InvalidPairingUriError).details).toBe(details)
      expect((error as InvalidPairingUriError).shortMessage).toBe('This is not a valid WalletConnect pairing link.')
    }
  })

  test('error: an expired pairing', () => {
    const uri = formatPairingUri({ topic, version: 2, relay: { protocol: 'irn' }, symKey, expiryTimestamp: 1_000 })
    expect(() => parsePairingUri(uri, { now: 1_000 })).toThrow(PairingExpiredError)
    expect(parsePairingUri(uri, { now: 999 }).expiryTimestamp).toBe(1_000)
  })
})
