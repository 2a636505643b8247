import { generateApiKeyPair, verifyApiKeyStamp } from '@latchkey/kms'
import { ApiKeyStamper } from '@turnkey/api-key-stamper'
import { encryptOtpCodeToBundle } from '@turnkey/crypto'
import { TurnkeyClient as OfficialTurnkeyClient, TurnkeyRequestError as OfficialTurnkeyRequestError } from '@turnkey/http'
import { verifyMessage } from 'viem'
import { describe, expect, test } from 'vitest'
import { createTurnkeyClient, kmsOperations, TurnkeyRequestError } from '../src/kmsClient.js'
import { type SessionKeyStore, stampWithKey } from '../src/sessionKeys.js'
import { createEmbeddedWallet } from '../src/wallet.js'
import { memoryStorage, useEmbeddedStack } from './harness.js'

// The thin client and the WebCrypto stamps against what they replace: the official @turnkey/http
// client's paths and refusals, @turnkey/api-key-stamper's stamps, and the real kms verifying ours.

const stack = useEmbeddedStack()

/** The browser's session keys without IndexedDB: a non-extractable WebCrypto key, stamped as in the page. */
function webCryptoKeys(): SessionKeyStore {
  let key: { privateKey: CryptoKey; publicKey: string } | undefined
  return {
    async create() {
      const pair = await crypto.subtle.generateKey({ name: 'ECDSA', namedCurve: 'P-256' }, false, ['sign', 'verify'])
      const raw = new Uint8Array(await crypto.subtle.exportKey('raw', pair.publicKey))
      const publicKey = Buffer.from([2 + (raw[64]! & 1), ...raw.subarray(1, 33)]).toString('hex')
      key = { privateKey: pair.privateKey, publicKey }
      return publicKey
    },
    async publicKey() {
      return key?.publicKey
    },
    stamper: { stamp: (payload) => stampWithKey(key!.privateKey, key!.publicKey, payload) },
    async clear() {
      key = undefined
    },
    // The consent frame's COLLECT_OTP with this key: the inbox's code sealed to the kms, and the
    // key's WebCrypto signature (raw r ‖ s) of its login.
    async collectOtp({ targetBundle, email, otpId }) {
      const code = await stack.codeFor(email)
      const encryptedOtpBundle = await encryptOtpCodeToBundle(code, targetBundle, key!.publicKey, stack.kms.signerPublicKey)
      const message = JSON.stringify({ login: { publicKey: key!.publicKey }, tokenId: otpId, type: 'USAGE_TYPE_LOGIN' })
      const signature = Buffer.from(await crypto.subtle.sign({ name: 'ECDSA', hash: 'SHA-256' }, key!.privateKey, new TextEncoder().encode(message))).toString(
        'hex',
      )
      return {
        encryptedOtpBundle,
        clientSignature: { publicKey: key!.publicKey, scheme: 'CLIENT_SIGNATURE_SCHEME_API_P256', message, signature },
        publicKey: key!.publicKey,
      }
    },
  }
}

describe('createTurnkeyClient', () => {
  test('default: every operation posts to the path the official client posts to', async () => {
    const official = new OfficialTurnkeyClient({ baseUrl: 'https://kms.test' }, { stamp: async () => ({ stampHeaderName: 'X-Stamp', stampHeaderValue: '' }) })
    for (const [name, path] of Object.entries(kmsOperations)) {
      const stampName = `stamp${name[0]!.toUpperCase()}${name.slice(1)}` as keyof OfficialTurnkeyClient
      const signed = await (official[stampName] as (input: unknown) => Promise<{ url: string }>)({})
      expect(`${name} ${signed.url}`).toBe(`${name} https://kms.test/public/v1/${path}`)
    }
  })

  test('error: a refusal reads as the official client reads it', async () => {
    // A key the kms does not know: both clients meet the same refusal.
    const stamper = new ApiKeyStamper(generateApiKeyPair())
    const input = { organizationId: stack.organizationId }
    const ours = await createTurnkeyClient({ baseUrl: stack.kms.url }, stamper)
      .getWhoami(input)
      .catch((error: unknown) => error)
    const theirs = await new OfficialTurnkeyClient({ baseUrl: stack.kms.url }, stamper).getWhoami(input).catch((error: unknown) => error)
    expect(theirs).toBeInstanceOf(OfficialTurnkeyRequestError)
    expect(ours).toBeInstanceOf(TurnkeyRequestError)
    const { message, code, details } = theirs as OfficialTurnkeyRequestError
    expect(ours).toMatchObject({ message, code, details })
    expect(message).toMatch(/^Turnkey error 16: /)
  })
})

describe('stampWithKey', () => {
  test('default: a WebCrypto stamp verifies in the kms and has the shape of @turnkey/api-key-stamper stamps', async () => {
    const keys = webCryptoKeys()
    const publicKey = await keys.create()
    for (let index = 0; index < 32; index++) {
      const body = JSON.stringify({ organizationId: stack.organizationId, index })
      const { stampHeaderName, stampHeaderValue } = await keys.stamper.stamp(body)
      expect(stampHeaderName).toBe('X-Stamp')
      expect(verifyApiKeyStamp(stampHeaderValue, new TextEncoder().encode(body))).toEqual({ publicKey, scheme: 'SIGNATURE_SCHEME_TK_API_P256' })
      expect(Object.keys(JSON.parse(Buffer.from(stampHeaderValue, 'base64url').toString('utf8')))).toEqual(['publicKey', 'scheme', 'signature'])
    }
  })

  test('error: a stamp over another body is refused by the kms', async () => {
    const keys = webCryptoKeys()
    await keys.create()
    const { stampHeaderValue } = await keys.stamper.stamp('{"a":1}')
    expect(() => verifyApiKeyStamp(stampHeaderValue, new TextEncoder().encode('{"a":2}'))).toThrow(
      'invalid stamp: the signature does not match the request body',
    )
  })

  test('behavior: a wallet whose session key is WebCrypto signs in by email and signs what viem verifies', async () => {
    const browser = stack.browserFetch()
    const wallet = createEmbeddedWallet({
      appName: 'Embedded test',
      backendUrl: stack.backendUrl,
      kmsUrl: stack.kms.url,
      organizationId: stack.organizationId,
      chains: [stack.chain],
      storage: memoryStorage(),
      testOnlySessionKeys: webCryptoKeys(),
      now: stack.now,
      fetch: browser.fetchFn,
    })
    const email = `webcrypto.${stack.clock}@example.test`
    const sent = await wallet.startEmail(email)
    const { address } = await wallet.verifyEmail(sent)
    const signature = await wallet.signMessage({ message: 'stamped by WebCrypto' })
    expect(await verifyMessage({ address, message: 'stamped by WebCrypto', signature })).toBe(true)
  })
})
