import type { AuthPayload } from '@latchkey/walletconnect'
import { createCacao, createRecap, formatAuthMessage } from '@latchkey/walletconnect/cacao'
import { privateKeyToAccount } from 'viem/accounts'
import { describe, expect, inject, test } from 'vitest'
import { anvilKeys } from '../../../test/chains.js'
import { answer, cookieOf, origin, useBackend } from './backend.js'

// POST /auth/cacao: WalletConnect's one-click sign-in lands here. The CACAO is built and signed
// as a wallet does (our walletconnect package, byte-compatible with the official verifier), and
// checked with the same SIWE rules as POST /auth/siwe.

const { t, post } = useBackend({ chains: [{ id: 31337, rpcUrl: inject('chainARpc') }] })
const alice = privateKeyToAccount(anvilKeys[6])
const mallory = privateKeyToAccount(anvilKeys[7])

async function nonceFor() {
  const response = await t.app.request('/auth/nonce', { headers: { origin } })
  const { nonce } = (await response.json()) as { nonce: string }
  return { nonce, cookie: cookieOf(response) }
}

/** A CACAO as a wallet returns it for chain 31337: `signer` signs the message claimed by `as`. */
async function cacaoFor(fields: Partial<AuthPayload> & { nonce: string }, signer = alice, as = alice.address) {
  const payload: AuthPayload = {
    chains: ['eip155:31337'],
    domain: 'localhost:5173',
    aud: origin,
    version: '1',
    iat: new Date(t.clock).toISOString(),
    statement: 'Sign in to Latchkey Demo.',
    resources: [createRecap('eip155', ['personal_sign'])],
    ...fields,
  }
  const iss = `did:pkh:eip155:31337:${as}`
  return createCacao({ payload, iss, signature: { t: 'eip191', s: await signer.signMessage({ message: formatAuthMessage({ payload, iss }) }) } })
}

const signIn = (cacao: unknown, cookie: string) => post('/auth/cacao', { cacao, walletKind: 'walletConnect' }, { cookie })

async function expectRefused(response: Response, status: number, code: string, message: string) {
  expect(await answer(response)).toEqual([status, { error: { code, message } }])
  expect(response.headers.get('set-cookie')).toBeNull()
}

describe('POST /auth/cacao', () => {
  test('default: a CACAO signed by its issuer signs in, as SIWE would', async () => {
    const { nonce, cookie } = await nonceFor()
    const exp = new Date(t.clock + 3_600_000).toISOString()
    const response = await signIn(await cacaoFor({ nonce, exp }), cookie)
    expect(await answer(response)).toEqual([
      200,
      { email: null, address: alice.address, organizationId: null, userId: null, kind: 'siwe', chainId: 31337, walletKind: 'walletConnect', expiresAt: exp },
    ])
    expect(response.headers.get('set-cookie')).toMatch(/^__Host-latchkey_session=/)
  })

  test('error: signed by another address: invalid_signature, no session', async () => {
    const { nonce, cookie } = await nonceFor()
    await expectRefused(
      await signIn(await cacaoFor({ nonce }, mallory, alice.address), cookie),
      401,
      'invalid_signature',
      `The signature is not ${alice.address}'s signature of this message`,
    )
  })

  test('error: for another domain: wrong_domain, no session', async () => {
    const { nonce, cookie } = await nonceFor()
    await expectRefused(
      await signIn(await cacaoFor({ nonce, domain: 'evil.example' }), cookie),
      400,
      'wrong_domain',
      'The message is for evil.example, not this app',
    )
  })

  test('error: a reused nonce: invalid_nonce, no second session', async () => {
    const { nonce, cookie } = await nonceFor()
    const cacao = await cacaoFor({ nonce })
    expect((await signIn(cacao, cookie)).status).toBe(200)
    await expectRefused(await signIn(cacao, cookie), 401, 'invalid_nonce', 'This nonce has been used; ask for a new one')
  })

  test('error: past its expiry: message_expired, no session', async () => {
    const { nonce, cookie } = await nonceFor()
    const exp = new Date(t.clock - 1).toISOString()
    await expectRefused(
      await signIn(await cacaoFor({ nonce, iat: new Date(t.clock - 60_000).toISOString(), exp }), cookie),
      401,
      'message_expired',
      `The message expired at ${exp}; sign in again`,
    )
  })

  test('error: an issuer that is not a did:pkh:eip155 account', async () => {
    const { nonce, cookie } = await nonceFor()
    const cacao = await cacaoFor({ nonce })
    await expectRefused(
      await signIn({ ...cacao, p: { ...cacao.p, iss: 'did:key:z6Mk' } }, cookie),
      400,
      'invalid_message',
      "The CACAO's issuer did:key:z6Mk is not a did:pkh:eip155 account",
    )
  })
})
