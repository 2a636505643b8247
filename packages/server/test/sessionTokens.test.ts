import { createPrivateKey, generateKeyPairSync } from 'node:crypto'
import type { AddressInfo } from 'node:net'
import { serve } from '@hono/node-server'
import { createRemoteJWKSet, decodeJwt, decodeProtectedHeader, jwtVerify } from 'jose'
import { privateKeyToAccount } from 'viem/accounts'
import { createSiweMessage } from 'viem/siwe'
import { afterEach, describe, expect, inject, test } from 'vitest'
import { anvilKeys } from '../../../test/chains.js'
import { createServerApp } from '../src/index.js'
import { answer, cookieOf, newEmail, origin, useBackend } from './backend.js'

// Session JWTs as another service of the app sees them: the backend runs on a port, and the
// service verifies with jose's createRemoteJWKSet against its /.well-known/jwks.json, never
// calling the backend about the session itself.

const { t, post, signedInByEmail, signedUpWithPasskey } = useBackend({ chains: [{ id: 31337, rpcUrl: inject('chainARpc') }] })
const alice = privateKeyToAccount(anvilKeys[8])

const servers: { close: (callback: () => void) => void }[] = []
afterEach(async () => {
  for (const server of servers.splice(0)) await new Promise<void>((resolve) => server.close(() => resolve()))
})

/** The test's app (or `app`) on a loopback port, as the app's other services reach it. */
async function running(app = t.app) {
  const server = await new Promise<ReturnType<typeof serve>>((resolve) => {
    const started = serve({ fetch: app.fetch, port: 0, hostname: '127.0.0.1' }, () => resolve(started))
  })
  servers.push(server)
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`
}

/** Sign-In with Ethereum as a browser does it: nonce, message, signature → the session cookie. */
async function signedInWithEthereum() {
  const nonceResponse = await t.app.request('/auth/nonce', { headers: { origin } })
  const { nonce } = (await nonceResponse.json()) as { nonce: string }
  const message = createSiweMessage({
    address: alice.address,
    chainId: 31337,
    domain: 'localhost:5173',
    uri: origin,
    version: '1',
    nonce,
    issuedAt: new Date(t.clock),
  })
  const response = await post(
    '/auth/siwe',
    { message, signature: await alice.signMessage({ message }), walletKind: 'injected' },
    { cookie: cookieOf(nonceResponse) },
  )
  expect(response.status).toBe(200)
  return { cookie: cookieOf(response), address: alice.address }
}

// Not configured: the development defaults (never the Host a request came with).
const [issuer, audience] = ['http://localhost:8787', 'latchkey-app']

type Tokens = { accessToken: string; tokenType: string; expiresAt: string; refreshToken: string; refreshExpiresAt: string }
const tokenFor = async (url: string, cookie: string) => {
  const response = await fetch(`${url}/auth/token`, { method: 'POST', headers: { cookie, origin, 'content-type': 'application/json' } })
  expect(response.status).toBe(200)
  expect(response.headers.get('cache-control')).toBe('no-store')
  return (await response.json()) as Tokens
}
const refresh = (url: string, refreshToken: string) =>
  fetch(`${url}/auth/token/refresh`, { method: 'POST', body: JSON.stringify({ refreshToken }), headers: { 'content-type': 'application/json' } })

const refused = [401, { error: { code: 'invalid_refresh_token', message: 'This refresh token is unknown, used, expired or signed out; sign in again' } }]

describe('POST /auth/token', () => {
  test('default: SIWE, email and passkey sessions each get an ES256 JWT that verifies against the JWKS; it lasts 300 s', async () => {
    const url = await running()
    const jwks = createRemoteJWKSet(new URL(`${url}/.well-known/jwks.json`))
    const siwe = await signedInWithEthereum()
    const email = newEmail()
    const byEmail = await signedInByEmail(email)
    const byPasskey = await signedUpWithPasskey()

    const claimsOf = async (cookie: string) => {
      const tokens = await tokenFor(url, cookie)
      expect(tokens.tokenType).toBe('Bearer')
      expect(tokens.refreshToken).toMatch(/^[\w-]{43}$/)
      const { payload, protectedHeader } = await jwtVerify(tokens.accessToken, jwks, { issuer, audience, algorithms: ['ES256'] })
      expect(protectedHeader).toEqual({ alg: 'ES256', kid: expect.stringMatching(/^[\w-]{43}$/), typ: 'at+jwt' })
      expect(payload.exp! - payload.iat!).toBe(300)
      expect(new Date(tokens.expiresAt).getTime()).toBe(payload.exp! * 1000)
      const { iss, aud, iat, exp, jti, sid, ...rest } = payload
      expect([iss, aud, typeof iat, typeof exp, typeof jti, typeof sid]).toEqual([issuer, audience, 'number', 'number', 'string', 'string'])
      return rest
    }
    expect(await claimsOf(siwe.cookie)).toEqual({ sub: alice.address, kind: 'siwe', chain_id: 31337, wallet_kind: 'injected' })
    expect(await claimsOf(byEmail.cookie)).toEqual({ sub: byEmail.address, kind: 'email', org: byEmail.organizationId, uid: byEmail.userId, email })
    expect(await claimsOf(byPasskey.cookie)).toEqual({ sub: byPasskey.address, kind: 'passkey', org: byPasskey.organizationId, uid: byPasskey.userId })
  })

  test('behavior: the JWKS is the one key, its kid its thumbprint; a token it did not sign does not verify', async () => {
    const url = await running()
    const response = await fetch(`${url}/.well-known/jwks.json`)
    expect(response.headers.get('cache-control')).toBe('public, max-age=300')
    const { keys } = (await response.json()) as { keys: Record<string, string>[] }
    expect(keys).toEqual([{ kty: 'EC', crv: 'P-256', x: expect.any(String), y: expect.any(String), kid: expect.any(String), alg: 'ES256', use: 'sig' }])
    const { cookie } = await signedInWithEthereum()
    const { accessToken } = await tokenFor(url, cookie)
    expect(decodeProtectedHeader(accessToken).kid).toBe(keys[0]!.kid)
    // Another backend (another key) signs a token for the same session: the first backend's JWKS refuses it.
    const other = createServerApp({ ...t.options, sessionJwtKey: undefined })
    const forged = (await (
      await other.request('/auth/token', { method: 'POST', headers: { cookie, origin, 'content-type': 'application/json' } })
    ).json()) as Tokens
    await expect(jwtVerify(forged.accessToken, createRemoteJWKSet(new URL(`${url}/.well-known/jwks.json`)))).rejects.toThrow(
      'no applicable key found in the JSON Web Key Set',
    )
  })

  test('behavior: a key from settings (PKCS#8 PEM or JWK) signs, and the same key gives the same kid across instances', async () => {
    const { privateKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' })
    const pem = privateKey.export({ format: 'pem', type: 'pkcs8' }).toString()
    // Read back from the PEM: Node 20 can deadlock exporting generateKeyPairSync's own key as a JWK (packages/kms/src/keys.ts).
    const jwk = JSON.stringify(createPrivateKey(pem).export({ format: 'jwk' }))
    const kidOf = async (sessionJwtKey: string) => {
      const app = createServerApp({ ...t.options, sessionJwtKey })
      return ((await (await app.request('/.well-known/jwks.json')).json()) as { keys: { kid: string }[] }).keys[0]!.kid
    }
    expect(await kidOf(jwk)).toBe(await kidOf(pem))
  })

  test('behavior: rotation overlaps: a token of the old key verifies once the new key is prepended, new tokens carry the new kid; once the old key is removed it does not verify', async () => {
    const pemOf = () => generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey.export({ format: 'pem', type: 'pkcs8' }).toString()
    const [oldKey, newKey] = [pemOf(), pemOf()]
    const backendWith = async (sessionJwtKey: string) => {
      const url = await running(createServerApp({ ...t.options, sessionJwtKey }))
      return { url, jwks: createRemoteJWKSet(new URL(`${url}/.well-known/jwks.json`)) }
    }
    const { cookie } = await signedInWithEthereum()
    const before = await backendWith(oldKey)
    const oldToken = (await tokenFor(before.url, cookie)).accessToken
    const oldKid = decodeProtectedHeader(oldToken).kid

    const rotating = await backendWith(`${newKey}\n${oldKey}`)
    const published = ((await (await fetch(`${rotating.url}/.well-known/jwks.json`)).json()) as { keys: { kid: string }[] }).keys.map((key) => key.kid)
    expect(published).toHaveLength(2)
    expect(published[1]).toBe(oldKid)
    expect((await jwtVerify(oldToken, rotating.jwks, { issuer, audience })).protectedHeader.kid).toBe(oldKid)
    const newToken = (await tokenFor(rotating.url, cookie)).accessToken
    expect((await jwtVerify(newToken, rotating.jwks, { issuer, audience })).protectedHeader.kid).toBe(published[0])

    const after = await backendWith(newKey)
    await expect(jwtVerify(oldToken, after.jwks, { issuer, audience })).rejects.toThrow('no applicable key found in the JSON Web Key Set')
    expect((await jwtVerify(newToken, after.jwks, { issuer, audience })).protectedHeader.kid).toBe(published[0])
  })

  test('behavior: a key list may be a JSON array of JWKs or a JWK Set, with the same kids as its PEM blocks', async () => {
    const pems = [0, 1].map(() => generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey.export({ format: 'pem', type: 'pkcs8' }).toString())
    const jwks = pems.map((pem) => createPrivateKey(pem).export({ format: 'jwk' }))
    const kidsOf = async (sessionJwtKey: string) => {
      const app = createServerApp({ ...t.options, sessionJwtKey })
      return ((await (await app.request('/.well-known/jwks.json')).json()) as { keys: { kid: string }[] }).keys.map((key) => key.kid)
    }
    const kids = await kidsOf(pems.join(''))
    expect(kids).toHaveLength(2)
    expect(await kidsOf(JSON.stringify(jwks))).toEqual(kids)
    expect(await kidsOf(JSON.stringify({ keys: jwks }))).toEqual(kids)
  })

  test('error: signed out, there is no token', async () => {
    expect(await answer(await post('/auth/token', {}))).toEqual([401, { error: { code: 'signed_out', message: 'Not signed in' } }])
  })
})

describe('POST /auth/token/refresh', () => {
  test('default: a refresh token gives a new access JWT and a new refresh token, once; a replay ends the session', async () => {
    const url = await running()
    const jwks = createRemoteJWKSet(new URL(`${url}/.well-known/jwks.json`))
    const { cookie } = await signedInWithEthereum()
    const first = await tokenFor(url, cookie)
    const renewed = await refresh(url, first.refreshToken)
    expect(renewed.status).toBe(200)
    const second = (await renewed.json()) as Tokens
    expect(second.refreshToken).not.toBe(first.refreshToken)
    expect((await jwtVerify(second.accessToken, jwks, { issuer, audience })).payload).toMatchObject({ sub: alice.address, kind: 'siwe' })
    // The first refresh token again: whoever holds it is not the client that just used it.
    expect(await answer(await refresh(url, first.refreshToken))).toEqual(refused)
    expect(await answer(await refresh(url, second.refreshToken))).toEqual(refused)
    expect(await (await fetch(`${url}/auth/session`, { headers: { cookie } })).json()).toBeNull()
  })

  test('behavior: sign-out revokes: the refresh token is refused after POST /auth/signout', async () => {
    const url = await running()
    const { cookie } = await signedInWithEthereum()
    const tokens = await tokenFor(url, cookie)
    expect((await fetch(`${url}/auth/signout`, { method: 'POST', headers: { cookie, origin, 'content-type': 'application/json' } })).status).toBe(204)
    expect(await answer(await refresh(url, tokens.refreshToken))).toEqual(refused)
  })

  test('behavior: POST /auth/token/revoke signs the session out, cookie included; an unknown token answers 204 too', async () => {
    const url = await running()
    const { cookie } = await signedInWithEthereum()
    const tokens = await tokenFor(url, cookie)
    const revoke = (refreshToken: string) =>
      fetch(`${url}/auth/token/revoke`, { method: 'POST', body: JSON.stringify({ refreshToken }), headers: { 'content-type': 'application/json' } })
    expect((await revoke(tokens.refreshToken)).status).toBe(204)
    expect(await (await fetch(`${url}/auth/session`, { headers: { cookie } })).json()).toBeNull()
    expect(await answer(await refresh(url, tokens.refreshToken))).toEqual(refused)
    expect((await revoke('A'.repeat(43))).status).toBe(204)
  })

  test('error: a malformed or unknown refresh token', async () => {
    expect(await answer(await post('/auth/token/refresh', { refreshToken: 'short' }))).toEqual([
      400,
      { error: { code: 'invalid_request', message: 'refreshToken: must be a refresh token this backend issued' } },
    ])
    expect(await answer(await post('/auth/token/refresh', { refreshToken: 'A'.repeat(43) }))).toEqual(refused)
  })
})

describe('the issuer and audience (L4)', () => {
  test('error: a request with Host attacker.example does not change iss; the configured issuer and audience are used', async () => {
    const { cookie } = await signedInWithEthereum()
    const configured = createServerApp({ ...t.options, sessionJwtIssuer: 'https://api.app.example', sessionJwtAudience: 'https://app.example/api' })
    for (const [app, expected] of [
      [t.app, { iss: issuer, aud: audience }],
      [configured, { iss: 'https://api.app.example', aud: 'https://app.example/api' }],
    ] as const) {
      const response = await app.request('http://attacker.example/auth/token', {
        method: 'POST',
        headers: { host: 'attacker.example', cookie, origin, 'content-type': 'application/json' },
      })
      const { accessToken } = (await response.json()) as Tokens
      expect(decodeJwt(accessToken)).toMatchObject(expected)
    }
  })
})
