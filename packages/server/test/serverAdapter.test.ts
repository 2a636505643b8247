import { connect, getSignIn, serverAdapter, signIn, signOut } from '@latchkey/core'
import { getFreePort } from '@latchkey/devnet'
import { privateKeyToAddress } from 'viem/accounts'
import { describe, expect, inject, test } from 'vitest'
import { anvilKeys } from '../../../test/chains.js'
import { setupClient } from '../../../test/setup.js'
import { createServerApp } from '../src/index.js'
import { useBackend } from './backend.js'

// @latchkey/core's serverAdapter against this backend, as a browser page uses it: its cookies kept
// by a small cookie jar in front of app.request, the Origin header a browser sends, the SIWE
// message built and signed by the core client with the dev wallet on anvil.

const { t } = useBackend({ chains: [{ id: 31337, rpcUrl: inject('chainARpc') }] })
const key = anvilKeys[8]
const address = privateKeyToAddress(key)
// Outside a browser the core client writes domain "localhost" and uri "http://localhost".
const pageOrigin = 'http://localhost'

/** A browser's view of the backend: one cookie jar, the page's Origin, and every status it saw. */
function browserFetch() {
  const jar = new Map<string, string>()
  const statuses: { path: string; status: number }[] = []
  const app = createServerApp({ ...t.options, allowedOrigins: [pageOrigin] })
  const fetchFn: typeof fetch = async (input, init) => {
    const url = new URL(String(input))
    const headers = new Headers(init?.headers)
    headers.set('origin', pageOrigin)
    if (jar.size) headers.set('cookie', [...jar].map(([name, value]) => `${name}=${value}`).join('; '))
    const response = await app.request(`${url.pathname}${url.search}`, { ...init, headers })
    for (const line of response.headers.getSetCookie()) {
      const [pair, ...attributes] = line.split(';')
      const [name, value] = pair!.split('=') as [string, string]
      if (attributes.some((attribute) => attribute.trim() === 'Max-Age=0')) jar.delete(name)
      else jar.set(name, value)
    }
    statuses.push({ path: url.pathname, status: response.status })
    return response
  }
  return { fetchFn, statuses, jar }
}

describe('serverAdapter', () => {
  test('default: signed out is null with no failed request; sign in, a reload restores, sign out', async () => {
    const browser = browserFetch()
    const adapter = serverAdapter('http://backend.test/', browser.fetchFn)
    expect(await adapter.getSession!()).toBeNull()
    expect(browser.statuses).toEqual([{ path: '/auth/session', status: 200 }])

    const { client } = setupClient({ privateKey: key, signIn: adapter })
    await connect(client, { connector: 'dev' })
    const session = await signIn(client)
    expect(session).toMatchObject({ address, kind: 'siwe', chainId: 31337, walletKind: 'injected' })
    expect(await adapter.getSession!()).toEqual(session)

    // A reload: a new client, the same cookies; the backend's session is restored.
    const reloaded = setupClient({ privateKey: key, signIn: serverAdapter('http://backend.test', browser.fetchFn) })
    await connect(reloaded.client, { connector: 'dev' })
    await reloaded.client.auth!.restore()
    expect(getSignIn(reloaded.client)).toMatchObject({ status: 'signedIn', session: { address } })

    await signOut(reloaded.client)
    expect(await adapter.getSession!()).toBeNull()
    expect(browser.jar.has('__Host-latchkey_session')).toBe(false)
    // Nothing that worked as intended answered with an HTTP error (a browser would print it).
    expect(browser.statuses.filter(({ status }) => status >= 400)).toEqual([])
    expect(browser.statuses.map(({ path }) => path)).toEqual([
      '/auth/session',
      '/auth/nonce',
      '/auth/siwe',
      '/auth/session',
      '/auth/session',
      '/auth/signout',
      '/auth/session',
    ])
  })

  test('behavior: a backend of an earlier version, which answered 401 when signed out, still reads as signed out', async () => {
    // That backend's answer, as it sent it; there is no older release of ours to run.
    const earlier: typeof fetch = async () => Response.json({ error: { code: 'signed_out', message: 'Not signed in' } }, { status: 401 })
    expect(await serverAdapter('http://backend.test', earlier).getSession!()).toBeNull()
  })

  test('error: an unreachable backend throws "The sign-in server is unreachable."; the client stays signed out', async () => {
    // A port nothing listens on.
    const adapter = serverAdapter(`http://127.0.0.1:${await getFreePort()}`)
    await expect(adapter.getSession!()).rejects.toMatchObject({ shortMessage: 'The sign-in server is unreachable.' })
    const { client } = setupClient({ privateKey: key, signIn: adapter })
    await connect(client, { connector: 'dev' })
    await client.auth!.restore()
    expect(getSignIn(client)).toMatchObject({ status: 'idle', session: undefined })
  })
})
