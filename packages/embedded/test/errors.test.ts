import { createServer } from 'node:http'
import { getFreePort } from '@latchkey/devnet'
import { generateApiKeyPair } from '@latchkey/kms'
import { TurnkeyClient } from '@turnkey/http'
import { afterEach, describe, expect, test } from 'vitest'
import { createEmbeddedWallet, createPasskey, passkeyFlows } from '../src/index.js'
import { memoryKeys, memoryStorage, useEmbeddedStack } from './harness.js'

// Each SPEC §8 embedded-wallet error reached the way an app would meet it, against the real kms
// and backend where one is involved. Where only a misbehaving service could cause one, the answer
// is changed in flight and the test says so.

const stack = useEmbeddedStack()
let people = 0

function walletWith(
  fetchFn: typeof fetch = stack.browserFetch().fetchFn,
  overrides: { kmsUrl?: string | undefined; organizationId?: string | undefined; backendUrl?: string } = {},
) {
  return createEmbeddedWallet({
    appName: 'Errors test',
    backendUrl: overrides.backendUrl ?? stack.backendUrl,
    kmsUrl: 'kmsUrl' in overrides ? overrides.kmsUrl : stack.kms.url,
    organizationId: 'organizationId' in overrides ? overrides.organizationId : stack.organizationId,
    chains: [stack.chain],
    storage: memoryStorage(),
    testOnlySessionKeys: memoryKeys(),
    now: stack.now,
    fetch: fetchFn,
  })
}

async function signIn(wallet: ReturnType<typeof walletWith>) {
  const email = `errors${++people}.${stack.clock}@example.test`
  const sent = await wallet.startEmail(email)
  return wallet.verifyEmail(sent)
}

/** A fetch that rewrites the JSON answer of requests whose path ends with `path`. */
function rewriting(path: string, change: (json: Record<string, unknown>) => Record<string, unknown>): typeof fetch {
  const browser = stack.browserFetch()
  return async (input, init) => {
    const response = await browser.fetchFn(input, init)
    if (!new URL(String(input)).pathname.endsWith(path)) return response
    return Response.json(change((await response.json()) as Record<string, unknown>), { status: response.status })
  }
}

afterEach(() => {
  delete (globalThis as { PublicKeyCredential?: unknown }).PublicKeyCredential
})

describe('SPEC §8 embedded-wallet errors', () => {
  test("error: 'Cannot proceed with your request', with the backend's reason", async () => {
    await expect(walletWith().startEmail('not-an-email')).rejects.toMatchObject({
      shortMessage: 'Cannot proceed with your request',
      details: 'email: Invalid email address',
    })
  })

  test("error: 'Webauthn is not supported on this device' where the browser has no WebAuthn (here: Node)", async () => {
    const passkeys = passkeyFlows(walletWith(), { rpId: 'localhost', appName: 'Errors test' })
    await expect(passkeys.signIn()).rejects.toMatchObject({ code: 'webauthn_not_supported', shortMessage: 'Webauthn is not supported on this device' })
    await expect(passkeys.signUp({ email: 'a@example.test' })).rejects.toMatchObject({ shortMessage: 'Webauthn is not supported on this device' })
  })

  test("error: 'Registering a passkey needs an email or a passkeyIdentifier' (SPEC §5)", async () => {
    const passkeys = passkeyFlows(walletWith(), { rpId: 'localhost', appName: 'Errors test' })
    await expect(passkeys.signUp({ email: ' ', passkeyIdentifier: '' })).rejects.toMatchObject({
      shortMessage: 'Registering a passkey needs an email or a passkeyIdentifier',
    })
  })

  test('error: ERROR_INVALID_USER_ID_LENGTH for a WebAuthn user id outside 1 to 64 bytes, before any prompt', async () => {
    // A browser with WebAuthn: the check happens before navigator.credentials is touched.
    ;(globalThis as { PublicKeyCredential?: unknown }).PublicKeyCredential = function PublicKeyCredential() {}
    for (const userId of [new Uint8Array(0), new Uint8Array(65)])
      await expect(createPasskey({ rpId: 'localhost', rpName: 'Errors test', userName: 'ada', userId })).rejects.toMatchObject({
        code: 'ERROR_INVALID_USER_ID_LENGTH',
      })
  })

  test("behavior: a passkey is asked for with SPEC §9's options; a dismissed prompt is ERROR_CEREMONY_ABORTED", async () => {
    // A browser whose authenticator prompt the user dismisses: what it was asked is kept.
    const asked: CredentialCreationOptions[] = []
    ;(globalThis as { PublicKeyCredential?: unknown }).PublicKeyCredential = function PublicKeyCredential() {}
    Object.defineProperty(globalThis, 'navigator', {
      configurable: true,
      value: {
        credentials: {
          create: async (options: CredentialCreationOptions) => {
            asked.push(options)
            throw new DOMException('The user dismissed the prompt', 'AbortError')
          },
        },
      },
    })
    try {
      await expect(createPasskey({ rpId: 'localhost', rpName: 'Errors test', userName: 'ada@example.test' })).rejects.toMatchObject({
        code: 'ERROR_CEREMONY_ABORTED',
      })
    } finally {
      Reflect.deleteProperty(globalThis, 'navigator')
    }
    const publicKey = asked[0]!.publicKey!
    expect(publicKey.timeout).toBe(300_000)
    expect(publicKey.authenticatorSelection).toMatchObject({ userVerification: 'preferred', residentKey: 'required' })
    expect(publicKey.pubKeyCredParams).toEqual([{ type: 'public-key', alg: -7 }])
    expect((publicKey.challenge as ArrayBuffer).byteLength).toBe(32)
    expect((publicKey.user.id as ArrayBuffer).byteLength).toBeGreaterThanOrEqual(1)
    expect((publicKey.user.id as ArrayBuffer).byteLength).toBeLessThanOrEqual(64)
    expect(publicKey.rp).toEqual({ id: 'localhost', name: 'Errors test' })
  })

  test("error: 'Required clients not found' when the backend cannot say where the kms is", async () => {
    const wallet = walletWith(undefined, { kmsUrl: undefined, organizationId: undefined, backendUrl: 'http://127.0.0.1:9' })
    await expect(wallet.settings()).rejects.toMatchObject({ shortMessage: 'Required clients not found' })
  })

  test("error: 'Turnkey sub organization id not found' when a sign-in answer names none (answer changed in flight)", async () => {
    const wallet = walletWith(rewriting('/auth/email/verify', (json) => ({ ...json, organizationId: '' })))
    await expect(signIn(wallet)).rejects.toMatchObject({ shortMessage: 'Turnkey sub organization id not found' })
    expect(wallet.current).toBeUndefined()
  })

  test("error: 'Sign raw payload result not found' when a completed signing activity has no signature (answer changed in flight)", async () => {
    // A proxy in front of the kms that drops the signature from sign_raw_payload's answer.
    const port = await getFreePort()
    const proxy = createServer(async (request, response) => {
      const body = await new Promise<Buffer>((resolve) => {
        const chunks: Buffer[] = []
        request.on('data', (chunk: Buffer) => chunks.push(chunk)).on('end', () => resolve(Buffer.concat(chunks)))
      })
      const headers = Object.fromEntries(Object.entries(request.headers).filter(([name]) => name.startsWith('x-') || name === 'content-type')) as Record<
        string,
        string
      >
      const upstream = await fetch(`${stack.kms.url}${request.url}`, {
        method: request.method ?? 'POST',
        headers,
        ...(request.method === 'POST' ? { body: new Uint8Array(body) } : {}),
      })
      let text = await upstream.text()
      if (request.url?.endsWith('/submit/sign_raw_payload')) {
        const { activity } = JSON.parse(text) as { activity: Record<string, unknown> }
        text = JSON.stringify({ activity: { ...activity, result: {} } })
      }
      response.writeHead(upstream.status, { 'content-type': 'application/json' }).end(text)
    })
    await new Promise<void>((resolve) => proxy.listen(port, '127.0.0.1', resolve))
    try {
      const wallet = walletWith(undefined, { kmsUrl: `http://127.0.0.1:${port}`, organizationId: stack.organizationId })
      await signIn(wallet)
      await expect(wallet.signMessage({ message: 'x' })).rejects.toMatchObject({ shortMessage: 'Sign raw payload result not found' })
    } finally {
      await new Promise((resolve) => proxy.close(resolve))
    }
  })

  test("error: 'Failed to create or restore session' once a recovery session has expired", async () => {
    const wallet = walletWith()
    await signIn(wallet)
    // The stored wallet says it came from an email recovery that ended a second ago.
    const current = wallet.current!
    const ended = new Date(stack.clock - 1000).toISOString()
    const storage = memoryStorage()
    storage.setItem(
      'latchkey.embedded.wallet',
      JSON.stringify({ ...current, recovery: { recoveryType: 'email', recoveryUserId: current.userId, createdAt: ended, sessionExpiration: ended } }),
    )
    const recovered = createEmbeddedWallet({
      appName: 'Errors test',
      backendUrl: stack.backendUrl,
      kmsUrl: stack.kms.url,
      organizationId: stack.organizationId,
      chains: [stack.chain],
      storage,
      testOnlySessionKeys: memoryKeys(),
      now: stack.now,
    })
    expect(recovered.isRecoverySessionActive()).toBe(false)
    await expect(recovered.signMessage({ message: 'x' })).rejects.toMatchObject({
      shortMessage: 'Failed to create or restore session',
      details: 'The recovery session has expired; sign in again.',
    })
    expect(recovered.current).toBeUndefined()
  })

  test("error: 'Activity requires consensus' when the user's organization needs a second root user's approval", async () => {
    const keys = memoryKeys()
    const wallet = createEmbeddedWallet({
      appName: 'Errors test',
      backendUrl: stack.backendUrl,
      kmsUrl: stack.kms.url,
      organizationId: stack.organizationId,
      chains: [stack.chain],
      storage: memoryStorage(),
      testOnlySessionKeys: keys,
      now: stack.now,
      fetch: stack.browserFetch().fetchFn,
    })
    await signIn(wallet)
    const { organizationId, userId } = wallet.current!
    // The user's own session key adds a second root user through the official client (the
    // wallet's client carries only the operations the wallet itself uses).
    const kms = new TurnkeyClient({ baseUrl: stack.kms.url }, keys.stamper)
    const cosigner = generateApiKeyPair()
    const added = await kms.createUsers({
      type: 'ACTIVITY_TYPE_CREATE_USERS_V4',
      timestampMs: String(stack.now()),
      organizationId,
      parameters: {
        users: [
          {
            userName: 'cosigner',
            apiKeys: [{ apiKeyName: 'cosigner', publicKey: cosigner.apiPublicKey, curveType: 'API_KEY_CURVE_P256', expirationSeconds: '3600' }],
            authenticators: [],
            oauthProviders: [],
            userTags: [],
          },
        ],
      },
    })
    const cosignerId = added.activity.result.createUsersResult!.userIds[0]!
    await kms.updateRootQuorum({
      type: 'ACTIVITY_TYPE_UPDATE_ROOT_QUORUM',
      timestampMs: String(stack.now() + 1),
      organizationId,
      parameters: { threshold: 2, userIds: [userId, cosignerId] },
    })
    await expect(wallet.signMessage({ message: 'needs two' })).rejects.toMatchObject({ code: 'consensus_needed', shortMessage: 'Activity requires consensus' })
  })
})
