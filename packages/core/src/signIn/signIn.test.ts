import type { Hex } from 'viem'
import { privateKeyToAddress } from 'viem/accounts'
import { describe, expect, test } from 'vitest'
import { anvilKeys } from '../../../../test/chains.js'
import { setupClient } from '../../../../test/setup.js'
import { verifyingAdapter } from '../../../../test/siwe.js'
import { connect } from '../actions/connect.js'
import { disconnect } from '../actions/disconnect.js'
import { UserRejectedRequestError } from '../errors/rpc.js'
import { getSignIn, signOut, watchSignIn } from './actions.js'
import { SignInNotConfiguredError } from './errors.js'
import { signIn } from './signIn.js'
import type { SignInStatus } from './store.js'

// Sign-in through the client with the dev wallet and an adapter that verifies for real (viem's
// SIWE verification against anvil, single-use nonces); the server's own checks are tested in
// packages/server.

const key = anvilKeys[2]
const address = privateKeyToAddress(key)

describe('signIn', () => {
  test('default: idle → signing → verifying → signedIn with one EIP-4361 message signed', async () => {
    const { adapter, calls } = verifyingAdapter()
    const { client, prompts } = setupClient({ privateKey: key, signIn: adapter })
    await connect(client, { connector: 'dev' })
    const seen: SignInStatus[] = []
    watchSignIn(client, (state) => seen.push(state.status))
    const session = await signIn(client, { statement: 'Sign in to the test.' })
    expect(session).toEqual({ address, chainId: 31337, walletKind: 'injected' })
    expect(seen).toEqual(['signing', 'verifying', 'signedIn'])
    expect(getSignIn(client)).toMatchObject({ status: 'signedIn', session })
    const message = prompts.at(-1)!.summary
    expect(message).toContain(`localhost wants you to sign in with your Ethereum account:\n${address}\n\nSign in to the test.`)
    expect(message).toMatch(/Chain ID: 31337\nNonce: nonce1abcdefgh\nIssued At: .*\nExpiration Time: /)
    expect(calls).toEqual(['getNonce', 'verify'])
  })

  test('error: a dismissed prompt leaves "error", and signing in again works', async () => {
    let allow = false
    const { adapter } = verifyingAdapter()
    const { client, logger } = setupClient({ privateKey: key, signIn: adapter, decide: async (prompt) => prompt.method !== 'personal_sign' || allow })
    await connect(client, { connector: 'dev' })
    await expect(signIn(client)).rejects.toBeInstanceOf(UserRejectedRequestError)
    expect(getSignIn(client)).toMatchObject({ status: 'error', session: undefined })
    // One denial, one warning (SPEC §8 handling), from the signature it denied.
    expect(logger.warnings).toEqual(['[latchkey] signMessage: User rejected the request.'])
    expect(logger.errors).toEqual([])
    allow = true
    await signIn(client)
    expect(getSignIn(client).status).toBe('signedIn')
  })

  test('error: a refusal by the backend is "error" with its reason; not connected is refused before any request', async () => {
    const { adapter, calls } = verifyingAdapter()
    const { client, logger } = setupClient({ privateKey: key, signIn: { ...adapter, verify: async () => Promise.reject(new Error('wrong domain')) } })
    await expect(signIn(client)).rejects.toThrow('Please call connect() before request()')
    expect(calls).toEqual([])
    await connect(client, { connector: 'dev' })
    await expect(signIn(client)).rejects.toMatchObject({ shortMessage: 'Sign-in was refused.', details: 'wrong domain' })
    expect(getSignIn(client).status).toBe('error')
    expect(logger.errors).toEqual(['[latchkey] signIn: Please call connect() before request()', '[latchkey] signIn: Sign-in was refused.'])
  })

  test('behavior: disconnecting ends the session at the backend; signOut alone keeps the wallet', async () => {
    const { adapter, calls } = verifyingAdapter()
    const { client } = setupClient({ privateKey: key, signIn: adapter })
    await connect(client, { connector: 'dev' })
    await signIn(client)
    await signOut(client)
    expect(getSignIn(client).status).toBe('idle')
    expect(client.getState().status).toBe('connected')
    await signIn(client)
    await disconnect(client)
    expect(getSignIn(client)).toMatchObject({ status: 'idle', session: undefined })
    expect(calls.filter((call) => call === 'signOut')).toHaveLength(2)
  })

  test('behavior: another account in the wallet ends the old session', async () => {
    const { adapter, calls } = verifyingAdapter()
    const { client, wallet } = setupClient({ privateKey: key, signIn: adapter })
    await connect(client, { connector: 'dev' })
    await signIn(client)
    wallet.emit('accountsChanged', [privateKeyToAddress(anvilKeys[3] as Hex)])
    expect(getSignIn(client).status).toBe('idle')
    expect(calls.at(-1)).toBe('signOut')
  })

  test('behavior: a session the backend kept is restored on mount when it is the connected address', async () => {
    const { adapter } = verifyingAdapter()
    const { client } = setupClient({ privateKey: key, signIn: { ...adapter, getSession: async () => ({ address, chainId: 31337 }) } })
    await connect(client, { connector: 'dev' })
    client.mount()
    await client.auth!.restore()
    expect(getSignIn(client)).toMatchObject({ status: 'signedIn', session: { address } })
  })

  test('error: without an adapter, sign-in says it is not configured', async () => {
    const { client } = setupClient({ privateKey: key })
    await expect(signIn(client)).rejects.toBeInstanceOf(SignInNotConfiguredError)
  })
})
