import { concat, hashMessage, stringToHex, toBytes, toHex } from 'viem'
import { describe, expect, test } from 'vitest'
import type { FrameRequest } from '../src/frames/browser/channel.js'
import { parseReviewAndStamp } from '../src/frames/browser/consentMessages.js'
import { assertPayloadMatches } from '../src/frames/browser/consentPayload.js'
import { parseStampQuery } from '../src/frames/browser/consentQuery.js'
import { signingKeyStorageKey, signingKeyStore, stampWithSigningKey } from '../src/frames/browser/signingKey.js'
import { memoryStore } from '../src/frames/browser/storage.js'
import { verifyApiKeyStamp } from '../src/index.js'

// The consent frame's parts in Node's WebCrypto: its signing key, its message checks, the binding
// of the payload to the reviewed request, and the stand-in review. Chromium drives the whole frame
// in packages/embedded/test/consentFrame.test.ts.

const account = '0x000000000000000000000000000000000000dEaD'
const app = 'https://app.example'
/** The EIP-191 preimage of `message`, as CONTRACT25 has the wallet send it (the kms hashes it with keccak256). */
const preimage = (message: string) => concat([stringToHex(`\x19Ethereum Signed Message:\n${toBytes(message).length}`), toHex(message)])
const signBody = (message: string, signWith: string = account, hashFunction = 'HASH_FUNCTION_KECCAK256', payload = preimage(message)) =>
  JSON.stringify({
    type: 'ACTIVITY_TYPE_SIGN_RAW_PAYLOAD_V2',
    timestampMs: '1',
    organizationId: 'org',
    parameters: { signWith, payload, encoding: 'PAYLOAD_ENCODING_HEXADECIMAL', hashFunction },
  })
const reviewAndStamp = (value: unknown): FrameRequest => ({ type: 'REVIEW_AND_STAMP', requestId: 'r1', value })
const valid = { request: { method: 'personal_sign', params: ['hello', account] }, payload: signBody('hello'), context: { account, chainId: 1 } }

describe('signing key', () => {
  test('default: non-extractable, one per parent origin, told as a compressed key; its stamps verify as the kms checks them', async () => {
    const store = memoryStore()
    const keys = signingKeyStore({ store })
    const key = await keys.getOrCreate(app, 60_000)
    expect(key.publicKeyHex).toMatch(/^0[23][0-9a-f]{64}$/)
    expect({ extractable: key.privateKey.extractable, usages: key.privateKey.usages, algorithm: key.privateKey.algorithm }).toEqual({
      extractable: false,
      usages: ['sign'],
      algorithm: { name: 'ECDSA', namedCurve: 'P-256' },
    })
    expect([...store.map.keys()]).toEqual([signingKeyStorageKey(app)])
    expect((await keys.getOrCreate(app, 60_000)).publicKeyHex).toBe(key.publicKeyHex)
    expect((await keys.getOrCreate('https://other.example', 60_000)).publicKeyHex).not.toBe(key.publicKeyHex)
    const body = signBody('hello')
    const stamp = await stampWithSigningKey(key, body)
    expect(stamp.stampHeaderName).toBe('X-Stamp')
    expect(verifyApiKeyStamp(stamp.stampHeaderValue, new TextEncoder().encode(body))).toEqual({
      publicKey: key.publicKeyHex,
      scheme: 'SIGNATURE_SCHEME_TK_API_P256',
    })
  })

  test('behavior: an expired key is dropped and replaced', async () => {
    let now = 0
    const keys = signingKeyStore({ store: memoryStore(), now: () => now })
    const key = await keys.getOrCreate(app, 1_000)
    now = 1_000
    expect(await keys.get(app)).toBeUndefined()
    expect((await keys.getOrCreate(app, 1_000)).publicKeyHex).not.toBe(key.publicKeyHex)
  })
})

describe('REVIEW_AND_STAMP', () => {
  test('default: a well-formed request', () => {
    expect(parseReviewAndStamp(reviewAndStamp(valid))).toEqual(valid)
  })

  test('error: malformed requests get -32602 and a reason', () => {
    const refusal = (value: unknown) => {
      try {
        parseReviewAndStamp(reviewAndStamp(value))
      } catch (error) {
        return { code: (error as { code?: number }).code, message: (error as Error).message }
      }
      return undefined
    }
    expect(refusal('x')).toEqual({ code: -32602, message: 'REVIEW_AND_STAMP needs value {request, payload, context}' })
    expect(refusal({ ...valid, request: { method: 'eth_sign', params: [] } })?.message).toBe(
      'REVIEW_AND_STAMP: request.method must be one of personal_sign, eth_signTypedData_v4, eth_sendTransaction, wallet_sendCalls, wallet_grantPermissions, eip7702_authorization, export_wallet, add_credential, add_account, init_import, import_wallet',
    )
    expect(refusal({ ...valid, request: { method: 'personal_sign', params: 'hello' } })?.message).toBe('REVIEW_AND_STAMP: request.params must be an array')
    expect(refusal({ ...valid, payload: '' })?.message).toBe('REVIEW_AND_STAMP needs payload (the body to stamp, a string)')
    expect(refusal({ ...valid, payload: 'x'.repeat(1024 * 1024 + 1) })?.message).toBe('REVIEW_AND_STAMP: payload is longer than 1048576 characters')
    expect(refusal({ ...valid, context: { account: 'alice', chainId: 1 } })?.message).toBe('REVIEW_AND_STAMP: context.account must be an address')
    expect(refusal({ ...valid, context: { account, chainId: 0 } })?.message).toBe('REVIEW_AND_STAMP: context.chainId must be a positive integer')
  })

  test('error: a payload that is not the reviewed request is refused', () => {
    const check =
      (payload: string, request: { method: string; params: unknown[] } = valid.request) =>
      () =>
        assertPayloadMatches(parseReviewAndStamp(reviewAndStamp({ ...valid, request, payload })))
    expect(check(signBody('hello'))).not.toThrow()
    expect(check(signBody('hello'), { method: 'personal_sign', params: [stringToHex('hello'), account] })).not.toThrow()
    expect(check(signBody('goodbye'))).toThrow('the payload does not sign this message with this account')
    expect(check(signBody('hello', '0x000000000000000000000000000000000000bEEF'))).toThrow('the payload does not sign this message with this account')
    // The opaque hash of the old encoding: the kms could not read what it signs.
    expect(check(signBody('hello', account, 'HASH_FUNCTION_NO_OP', hashMessage('hello')))).toThrow('the payload does not sign this message with this account')
    expect(check(signBody('hello', account, 'HASH_FUNCTION_NO_OP'))).toThrow('the payload does not sign this message with this account')
    expect(check(JSON.stringify({ type: 'ACTIVITY_TYPE_EXPORT_WALLET', parameters: {} }))).toThrow('the payload does not sign this message with this account')
    expect(check('not json')).toThrow('the payload is not a JSON kms request')
    expect(check(signBody('hello'), { method: 'eth_sendTransaction', params: [{}] })).toThrow(
      'the payload is not a transaction signature (ACTIVITY_TYPE_SIGN_TRANSACTION_V2), it is ACTIVITY_TYPE_SIGN_RAW_PAYLOAD_V2',
    )
    expect(check(signBody('hello'), { method: 'wallet_grantPermissions', params: [{}] })).toThrow(
      'the payload is not a grant (ACTIVITY_TYPE_LATCHKEY_CREATE_GRANT), it is ACTIVITY_TYPE_SIGN_RAW_PAYLOAD_V2',
    )
  })
})

describe('STAMP_QUERY', () => {
  const stampQuery = (value: unknown): FrameRequest => ({ type: 'STAMP_QUERY', requestId: 'q1', value })
  const refusal = (value: unknown) => {
    try {
      parseStampQuery(stampQuery(value))
    } catch (error) {
      return { code: (error as { code?: number }).code, message: (error as Error).message }
    }
    return undefined
  }

  test('default: a read-only query body is stamped as it is', () => {
    const body = JSON.stringify({ organizationId: 'org', userId: 'user' })
    expect(parseStampQuery(stampQuery({ payload: body }))).toBe(body)
  })

  test('error: a body with an activity type or parameters is refused: an activity needs the user’s Approve', () => {
    const onlyQueries = 'STAMP_QUERY stamps read-only queries only: an activity (a body with type or parameters) needs REVIEW_AND_STAMP'
    expect(refusal({ payload: signBody('hello') })).toEqual({ code: -32602, message: onlyQueries })
    expect(refusal({ payload: JSON.stringify({ type: 'ACTIVITY_TYPE_EXPORT_WALLET', organizationId: 'org' }) })).toEqual({ code: -32602, message: onlyQueries })
    expect(refusal({ payload: JSON.stringify({ organizationId: 'org', parameters: {} }) })).toEqual({ code: -32602, message: onlyQueries })
  })

  test('error: malformed bodies get -32602 and a reason', () => {
    const needsPayload = 'STAMP_QUERY needs value {payload} (the query body to stamp, a string)'
    expect(refusal(undefined)).toEqual({ code: -32602, message: needsPayload })
    expect(refusal({ payload: '' })).toEqual({ code: -32602, message: needsPayload })
    expect(refusal({ payload: 'not json' })).toEqual({ code: -32602, message: 'STAMP_QUERY: the payload is not a JSON kms query' })
    expect(refusal({ payload: '[1]' })).toEqual({ code: -32602, message: 'STAMP_QUERY: the payload is not a JSON kms query' })
    expect(refusal({ payload: 'x'.repeat(1024 * 1024 + 1) })).toEqual({ code: -32602, message: 'STAMP_QUERY: payload is longer than 1048576 characters' })
  })
})
