import { createServer, type IncomingHttpHeaders } from 'node:http'
import type { AddressInfo } from 'node:net'
import { generateApiKeyPair, verifyApiKeyStamp } from '@latchkey/kms'
import { withRequestId } from '@latchkey/service'
import { ApiKeyStamper } from '@turnkey/api-key-stamper'
import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import { createDelegatedAccess } from '../src/internal/delegated.js'
import { apiKeyStamper, KmsClient } from '../src/internal/kmsClient.js'

// How the backend calls the kms: its stamps (the key parsed once, not per call) are the ones
// @turnkey/api-key-stamper makes, and every client it holds, the delegated users' too, tells the
// kms which request it serves.

const keys = generateApiKeyPair()
const decode = (header: string) => JSON.parse(Buffer.from(header, 'base64url').toString()) as Record<string, string>

describe('the backend’s kms client', () => {
  test('default: a stamp the kms verifies, shaped as @turnkey/api-key-stamper’s', async () => {
    const body = JSON.stringify({ organizationId: 'o', type: 'ACTIVITY_TYPE_INIT_OTP_V3' })
    const ours = await apiKeyStamper(keys).stamp(body)
    const theirs = await new ApiKeyStamper(keys).stamp(body)
    expect(ours.stampHeaderName).toBe(theirs.stampHeaderName)
    expect(Object.keys(decode(ours.stampHeaderValue))).toEqual(Object.keys(decode(theirs.stampHeaderValue)))
    expect(verifyApiKeyStamp(ours.stampHeaderValue, new TextEncoder().encode(body))).toEqual({
      publicKey: keys.apiPublicKey,
      scheme: 'SIGNATURE_SCHEME_TK_API_P256',
    })
    // Signed again for each body: a stamp never verifies for another.
    const other = await apiKeyStamper(keys).stamp(`${body} `)
    expect(() => verifyApiKeyStamp(other.stampHeaderValue, new TextEncoder().encode(body))).toThrow()
  })

  test('error: a public key that is no P-256 point fails the call, as before', async () => {
    await expect(apiKeyStamper({ ...keys, apiPublicKey: `02${'ff'.repeat(32)}` }).stamp('{}')).rejects.toThrow(
      'unable to load API key: invalid public key (a compressed P-256 public key in hex)',
    )
  })

  describe('request ids', () => {
    const seen: IncomingHttpHeaders[] = []
    const server = createServer((request, response) => {
      seen.push(request.headers)
      request.resume()
      request.on('end', () => response.writeHead(200, { 'content-type': 'application/json' }).end('{"activity":{"status":"ACTIVITY_STATUS_COMPLETED"}}'))
    })
    let url = ''
    beforeAll(async () => {
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
      url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
    })
    afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())))

    test('behavior: the delegated user’s calls (its policies, leaving the root quorum) carry the request id, as the parent’s do', async () => {
      seen.length = 0
      const kms = new KmsClient({ baseUrl: url }, apiKeyStamper(keys))
      const delegated = createDelegatedAccess({ kms, kmsUrl: url, delegationSecret: keys.apiPrivateKey, now: () => 1_000 })
      await withRequestId('sign-in-7', async () => {
        await kms.getWhoami({ organizationId: 'parent' })
        await delegated.newUser().limit('sub', ['end-user', 'delegated-user'])
      })
      expect(seen.map((headers) => headers['x-request-id'])).toEqual(['sign-in-7', 'sign-in-7', 'sign-in-7'])
      // The first by the parent's key, the other two by the delegated user's.
      expect(seen.map((headers) => decode(headers['x-stamp'] as string)['publicKey'] === keys.apiPublicKey)).toEqual([true, false, false])
    })
  })
})
