import { getFreePort } from '@latchkey/devnet'
import { afterEach, expect, test } from 'vitest'
import { createAppServer } from '../src/index.js'
import { cookieOf, newEmail, origin, useBackend } from './backend.js'

// The cookie's scope (security review L6, M1): a __Host- name, Secure whatever scheme the request
// came with (a TLS proxy in front that the backend does not trust still gets Secure cookies),
// Path=/, no Domain, SameSite=Strict.

const { t, signedUpWithPasskey } = useBackend()
const started: ReturnType<typeof createAppServer>[] = []
afterEach(async () => {
  for (const server of started.splice(0)) await server.stop()
})

test('default: the session cookie is __Host-, httpOnly, Secure, Path=/, SameSite=Strict, with no Domain', async () => {
  const { cookie } = await signedUpWithPasskey({ email: newEmail() })
  expect(cookie).toMatch(/^__Host-latchkey_session=[\w-]{43}$/)
  const nonce = await t.app.request('http://api.example/auth/nonce', { headers: { origin } })
  expect(nonce.headers.get('set-cookie')).toBe(`${cookieOf(nonce)}; Max-Age=600; Path=/; HttpOnly; Secure; SameSite=Strict`)
})

test('behavior: behind a TLS proxy it does not trust (no trustProxy), the backend still sets Secure cookies', async () => {
  const server = createAppServer({ ...t.options, port: await getFreePort() })
  await server.start()
  started.push(server)
  const response = await fetch(`${server.url}/auth/nonce`, { headers: { origin, 'x-forwarded-proto': 'https' } })
  expect(response.headers.get('set-cookie')).toMatch(/^__Host-latchkey_siwe=[\w-]{43}; Max-Age=600; Path=\/; HttpOnly; Secure; SameSite=Strict$/)
})

test('behavior: signing out clears the cookie with the attributes a __Host- cookie needs to be replaced', async () => {
  const { cookie } = await signedUpWithPasskey({ email: newEmail() })
  const out = await t.app.request('/auth/signout', { method: 'POST', headers: { cookie, origin, 'content-type': 'application/json' } })
  expect([out.status, out.headers.get('set-cookie')]).toEqual([204, '__Host-latchkey_session=; Max-Age=0; Path=/; HttpOnly; Secure; SameSite=Strict'])
})
