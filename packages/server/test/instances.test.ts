import { generateKeyPairSync } from 'node:crypto'
import { getFreePort } from '@latchkey/devnet'
import { generateP256KeyPair } from '@turnkey/crypto'
import { createRemoteJWKSet, jwtVerify } from 'jose'
import { privateKeyToAccount } from 'viem/accounts'
import { createSiweMessage } from 'viem/siwe'
import { afterEach, expect, inject, test } from 'vitest'
import { anvilKeys } from '../../../test/chains.js'
import { freshDatabaseUrl } from '../../service/test/testDatabase.js'
import { createAppServer, openStore } from '../src/index.js'
import { cookieOf, newEmail, origin, useBackend } from './backend.js'

// Two backend instances on one database (PostgreSQL in `npm run test:server-postgres`, a SQLite
// file in the default run), as behind a load balancer: each over HTTP with its own store
// connection, one session JWT key, the requests of one browser landing on either.

const { t, mailTo } = useBackend()
const alice = privateKeyToAccount(anvilKeys[9])
const sessionJwtKey = generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey.export({ format: 'pem', type: 'pkcs8' }).toString()

const started: ReturnType<typeof createAppServer>[] = []
afterEach(async () => {
  for (const server of started.splice(0)) await server.stop()
})

async function twoInstances() {
  const url = await freshDatabaseUrl()
  const instance = async () => {
    const server = createAppServer({
      ...t.options,
      store: await openStore(url),
      port: await getFreePort(),
      sessionJwtKey,
      sessionJwtIssuer: 'https://api.example',
      chains: [{ id: 31337, rpcUrl: inject('chainARpc') }],
    })
    await server.start()
    started.push(server)
    return server.url
  }
  return [await instance(), await instance()] as const
}

const call = (base: string, path: string, init: { json?: unknown; cookie?: string | undefined } = {}) =>
  fetch(`${base}${path}`, {
    method: init.json === undefined ? 'GET' : 'POST',
    ...(init.json === undefined ? {} : { body: JSON.stringify(init.json) }),
    headers: { origin, 'content-type': 'application/json', ...(init.cookie ? { cookie: init.cookie } : {}) },
  })

test('behavior: an account made on one instance signs in on the other; its session is the same on both, and ends on both', async () => {
  const [a, b] = await twoInstances()
  const email = newEmail()
  // Sign-up on A: the code is asked for on A, redeemed on B.
  const start = await call(a, '/auth/email/start', { json: { email } })
  expect(start.status).toBe(200)
  const { otpId } = (await start.json()) as { otpId: string }
  const code = /sign-in code is (\d{6})\./.exec((await mailTo(email))[0]!.text)![1]
  const verify = await call(b, '/auth/email/verify', { json: { otpId, code, targetPublicKey: generateP256KeyPair().publicKeyUncompressed } })
  expect(verify.status).toBe(200)
  const account = (await verify.json()) as { organizationId: string; userId: string; address: string }
  const cookie = cookieOf(verify)

  const sessionOn = async (base: string) => (await call(base, '/auth/session', { cookie })).json()
  const expected = {
    email,
    organizationId: account.organizationId,
    userId: account.userId,
    address: account.address,
    kind: 'email',
    expiresAt: expect.any(String),
  }
  expect(await sessionOn(a)).toEqual(expected)
  expect(await sessionOn(b)).toEqual(expected)
  // A second sign-in of the same email, on B, finds the account A created: no second sub-organization.
  const again = await call(b, '/auth/email/start', { json: { email } })
  expect(again.status).toBe(200)
  const suborganizations = await t.backend.getSubOrgIds({ organizationId: t.parentOrganizationId, filterType: 'EMAIL', filterValue: email })
  expect(suborganizations.organizationIds).toEqual([account.organizationId])

  // A token from A refreshes on B and verifies against either's JWKS; signing out on B ends it on A.
  const token = (await (await call(a, '/auth/token', { json: {}, cookie })).json()) as { accessToken: string; refreshToken: string }
  const { payload } = await jwtVerify(token.accessToken, createRemoteJWKSet(new URL(`${b}/.well-known/jwks.json`)), { issuer: 'https://api.example' })
  expect(payload).toMatchObject({ sub: account.address, org: account.organizationId, email })
  const refreshed = await call(b, '/auth/token/refresh', { json: { refreshToken: token.refreshToken } })
  expect(refreshed.status).toBe(200)
  expect((await call(b, '/auth/signout', { json: {}, cookie })).status).toBe(204)
  expect(await sessionOn(a)).toBeNull()
  const { refreshToken } = (await refreshed.json()) as { refreshToken: string }
  expect((await call(a, '/auth/token/refresh', { json: { refreshToken } })).status).toBe(401)
})

test('behavior: one SIWE nonce sent to both instances at once signs in exactly once', async () => {
  const [a, b] = await twoInstances()
  const nonceResponse = await call(a, '/auth/nonce')
  const { nonce } = (await nonceResponse.json()) as { nonce: string }
  const message = createSiweMessage({
    address: alice.address,
    chainId: 31337,
    domain: 'localhost:5173',
    uri: origin,
    version: '1',
    nonce,
    issuedAt: new Date(),
  })
  const body = { message, signature: await alice.signMessage({ message }) }
  const answers = await Promise.all([a, b, a, b].map((base) => call(base, '/auth/siwe', { json: body, cookie: cookieOf(nonceResponse) })))
  expect(answers.map((response) => response.status).sort()).toEqual([200, 401, 401, 401])
})
