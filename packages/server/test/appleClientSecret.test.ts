import { createServer, type Server } from 'node:http'
import { getFreePort } from '@latchkey/devnet'
import { decodeProtectedHeader, exportPKCS8, generateKeyPair, jwtVerify } from 'jose'
import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import { APPLE_CLIENT_SECRET_SECONDS, APPLE_ISSUER, appleClientSecret } from '../src/index.js'
import { createOAuth } from '../src/routes/oauth.js'
import { openStore } from '../src/store.js'

// Apple's code exchange takes a client secret the app signs: an ES256 JWT with the team's Sign in
// with Apple key. Apple's token endpoint cannot run here, so the JWT is verified as Apple would:
// with the key's public half, for its header and claims, and across its renewal on a controlled clock.

const team = { clientId: 'com.example.web', teamId: 'TEAM123456', keyId: 'KEY1234567' }
let keys: Awaited<ReturnType<typeof generateKeyPair>>
let privateKey: string
beforeAll(async () => {
  keys = await generateKeyPair('ES256', { extractable: true })
  privateKey = await exportPKCS8(keys.privateKey)
})

describe('appleClientSecret', () => {
  test('default: an ES256 JWT by the key id, from the team, for the Services ID, to Apple, living one day', async () => {
    let clock = Date.parse('2026-11-24T06:00:00Z')
    const secret = await appleClientSecret({ ...team, privateKey, now: () => clock })
    const jwt = await secret()
    expect(decodeProtectedHeader(jwt)).toEqual({ alg: 'ES256', kid: team.keyId })
    const { payload } = await jwtVerify(jwt, keys.publicKey, {
      issuer: team.teamId,
      subject: team.clientId,
      audience: APPLE_ISSUER,
      algorithms: ['ES256'],
      currentDate: new Date(clock),
    })
    expect(payload).toEqual({ iss: team.teamId, sub: team.clientId, aud: APPLE_ISSUER, iat: clock / 1000, exp: clock / 1000 + 86_400 })
    clock += 1000
    expect(await secret()).toBe(jwt)
  })

  test('behavior: kept until half its lifetime has passed, then signed anew; every secret handed out has at least half its lifetime left', async () => {
    const start = Date.parse('2026-11-24T06:00:00Z')
    let clock = start
    const lifetimeSeconds = 3600
    const secret = await appleClientSecret({ ...team, privateKey, lifetimeSeconds, now: () => clock })
    const first = await secret()
    clock = start + 1799_000
    expect(await secret()).toBe(first)
    clock = start + 1800_000
    const second = await secret()
    expect(second).not.toBe(first)
    for (const [jwt, at] of [
      [first, start + 1799_000],
      [second, start + 1800_000 + 1799_000],
    ] as const)
      await expect(jwtVerify(jwt, keys.publicKey, { currentDate: new Date(at), audience: APPLE_ISSUER })).resolves.toBeDefined()
    // The first one is dead by its expiry; the one handed out then still lives.
    clock = start + 3600_000
    await expect(jwtVerify(first, keys.publicKey, { currentDate: new Date(clock) })).rejects.toThrow('"exp" claim timestamp check failed')
    await expect(jwtVerify(await secret(), keys.publicKey, { currentDate: new Date(clock) })).resolves.toBeDefined()
  })

  test('error: a lifetime over six months, a missing team id, or a key that is not P-256 PKCS#8 is refused at once', async () => {
    await expect(appleClientSecret({ ...team, privateKey, lifetimeSeconds: APPLE_CLIENT_SECRET_SECONDS.max + 1 })).rejects.toThrow(
      'lifetimeSeconds must be a whole number from 60 to 15777000 (six months)',
    )
    await expect(appleClientSecret({ ...team, teamId: ' ', privateKey })).rejects.toThrow("teamId is required for Apple's client secret")
    const rsa = await exportPKCS8((await generateKeyPair('RS256', { extractable: true })).privateKey)
    await expect(appleClientSecret({ ...team, privateKey: rsa })).rejects.toThrow(
      'privateKey must be the Sign in with Apple key: a P-256 private key in PKCS#8 PEM (the .p8 file)',
    )
  })
})

describe('the code exchange', () => {
  // Apple's token endpoint, reduced to what it receives: the form of each exchange.
  const forms: URLSearchParams[] = []
  let endpoint: Server
  let tokenUrl: string
  beforeAll(async () => {
    const port = await getFreePort()
    tokenUrl = `http://127.0.0.1:${port}/auth/token`
    endpoint = createServer((request, response) => {
      let body = ''
      request.on('data', (chunk: Buffer) => (body += chunk))
      request.on('end', () => {
        forms.push(new URLSearchParams(body))
        response.writeHead(400, { 'content-type': 'application/json' }).end(JSON.stringify({ error: 'invalid_grant' }))
      })
    })
    await new Promise<void>((resolve) => endpoint.listen(port, '127.0.0.1', resolve))
  })
  afterAll(() => new Promise<void>((resolve) => endpoint.close(() => resolve())))

  test('default: the backend sends the current client secret with the code, and Apple’s refusal is invalid_token', async () => {
    const store = await openStore(':memory:')
    try {
      const clientSecret = await appleClientSecret({ ...team, privateKey })
      const oauth = createOAuth(
        { apple: { issuer: APPLE_ISSUER, clientId: team.clientId, clientSecret, authorizationEndpoint: tokenUrl, tokenEndpoint: tokenUrl, jwksUri: tokenUrl } },
        Date.now,
        store,
      )
      await expect(oauth.exchange('apple', 'the-code', 'v'.repeat(43), 'https://api.app.example/auth/oauth/callback')).rejects.toThrow(
        'Apple refused the sign-in code: invalid_grant',
      )
      const form = forms.at(-1)!
      expect({ clientId: form.get('client_id'), code: form.get('code'), secret: form.get('client_secret') }).toEqual({
        clientId: team.clientId,
        code: 'the-code',
        secret: await clientSecret(),
      })
      await expect(jwtVerify(form.get('client_secret')!, keys.publicKey, { issuer: team.teamId, audience: APPLE_ISSUER })).resolves.toBeDefined()
    } finally {
      await store.close()
    }
  })
})
