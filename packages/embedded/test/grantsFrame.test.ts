import { createServer, type Server } from 'node:http'
import { fileURLToPath } from 'node:url'
import { getFreePort } from '@latchkey/devnet'
import { createKms, generateApiKeyPair, type Kms, verifyApiKeyStamp } from '@latchkey/kms'
import { ApiKeyStamper } from '@turnkey/api-key-stamper'
import { TurnkeyClient } from '@turnkey/http'
import { type Browser, chromium, type Frame, type Page } from 'playwright-core'
import { rolldown } from 'rolldown'
import { parseEther, parseGwei, parseTransaction, recoverTransactionAddress, serializeTransaction, toHex } from 'viem'
import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import { chromiumLaunchOptions } from '../../../test/chromium.js'
import { dialogViolations } from '../../kms/test/frameAxe.js'
import type { GrantRefusedError } from '../src/errors.js'
import { asGrantRefusal } from '../src/grants.js'
import { postStamped, TurnkeyRequestError } from '../src/kmsClient.js'
import { toGrantParameters } from '../src/permissions.js'

// ERC-7715 grants end to end in Chromium: a real kms serving the consent frame, an app page that
// mounts it with mountConsentFrame (bundled from source), Playwright's trusted key presses. The
// user approves a grant in the frame, which makes the grant's key; a transaction inside the grant
// is then stamped with no dialog and signed by the kms, which refuses (typed) what the grant does
// not allow. The kms's clock is the test's, so a grant expires without waiting.

let kms: Kms
let appServer: Server
let appOrigin: string
let browser: Browser
let backend: TurnkeyClient
let organizationId: string
const clock = { now: Date.now() }

const recipient = '0x70997970C51812dc3A010C7d01b50e0d17dc79C8'
const HOUR = 3600

const appPage = (bundle: string) => ({
  '/': `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>App</title>
<script type="module">
import { mountConsentFrame } from '/consentFrame.js'
window.mountConsentFrame = mountConsentFrame
window.appReady = true
</script></head><body><h1>App</h1></body></html>`,
  '/consentFrame.js': bundle,
})

beforeAll(async () => {
  const appPort = await getFreePort()
  appOrigin = `http://localhost:${appPort}`
  kms = createKms({ port: await getFreePort(), now: () => clock.now, frames: { port: await getFreePort(), parentOrigins: [appOrigin] } })
  await kms.start()
  const backendKey = generateApiKeyPair()
  organizationId = (await kms.createParentOrganization({ name: 'App', userName: 'backend', publicKey: backendKey.apiPublicKey })).organizationId
  backend = new TurnkeyClient({ baseUrl: kms.url }, new ApiKeyStamper(backendKey))
  const bundler = await rolldown({
    input: fileURLToPath(new URL('../src/consentFrame.ts', import.meta.url)),
    platform: 'browser',
    resolve: { conditionNames: ['source', 'browser', 'import', 'default'] },
    logLevel: 'warn',
  })
  const { output } = await bundler.generate({ format: 'esm' })
  await bundler.close()
  const files: Record<string, string> = appPage(output[0].code)
  appServer = createServer((request, response) => {
    const body = files[request.url ?? '']
    response.writeHead(body === undefined ? 404 : 200, { 'content-type': request.url?.endsWith('.js') ? 'text/javascript' : 'text/html' })
    response.end(body ?? 'Not found')
  })
  await new Promise<void>((resolve) => appServer.listen(appPort, '127.0.0.1', resolve))
  browser = await chromium.launch(chromiumLaunchOptions)
}, 120_000)

afterAll(async () => {
  await browser?.close()
  await new Promise((resolve) => appServer?.close(resolve))
  await kms?.stop()
})

/**
 * A fresh app page with the consent frame mounted, and a sub-organization whose user's key is the
 * frame's (and, given, `otherKey` too: a second key of the user's, as another browser's session).
 */
async function openApp(otherKey?: { apiPublicKey: string }) {
  // A profile per app: the frame keeps one session key per app origin, and the kms registers a key once.
  const page = await (await browser.newContext()).newPage()
  await page.goto(appOrigin)
  await page.waitForFunction(() => (window as { appReady?: boolean }).appReady === true)
  const publicKey = await page.evaluate(async (framesUrl) => {
    const scope = window as unknown as { mountConsentFrame: (p: { framesUrl: string }) => Promise<{ publicKey: string }>; consent: unknown }
    scope.consent = await scope.mountConsentFrame({ framesUrl })
    return (scope.consent as { publicKey: string }).publicKey
  }, kms.framesUrl!)
  const { activity } = await backend.createSubOrganization({
    type: 'ACTIVITY_TYPE_CREATE_SUB_ORGANIZATION_V8',
    timestampMs: String(clock.now),
    organizationId,
    parameters: {
      subOrganizationName: `grants ${publicKey.slice(2, 12)} ${Math.random()}`,
      rootQuorumThreshold: 1,
      rootUsers: [
        {
          userName: 'user',
          apiKeys: [
            { apiKeyName: 'consent frame', publicKey, curveType: 'API_KEY_CURVE_P256' },
            ...(otherKey ? [{ apiKeyName: 'other browser', publicKey: otherKey.apiPublicKey, curveType: 'API_KEY_CURVE_P256' as const }] : []),
          ],
          authenticators: [],
          oauthProviders: [],
        },
      ],
      wallet: {
        walletName: 'Wallet',
        accounts: [{ curve: 'CURVE_SECP256K1', pathFormat: 'PATH_FORMAT_BIP32', path: "m/44'/60'/0'/0/0", addressFormat: 'ADDRESS_FORMAT_ETHEREUM' }],
      },
    },
  })
  const result = activity.result.createSubOrganizationResultV8!
  const user = { organizationId: result.subOrganizationId!, userId: result.rootUserIds![0]!, address: result.wallet!.addresses[0] as `0x${string}` }
  return { page, publicKey, user }
}
type App = Awaited<ReturnType<typeof openApp>>

type Failure = { name: string; code: number; message: string }
/** Calls `consent[method](...args)` in the page; answers its value or its error. */
function consentCall<value>(page: Page, method: string, args: unknown[]): Promise<{ value?: value; error?: Failure }> {
  return page.evaluate(
    ({ method, args }) => {
      const consent = (window as unknown as { consent: Record<string, (...values: unknown[]) => Promise<unknown>> }).consent
      return consent[method]!(...args).then(
        (value) => ({ value }),
        (error: Failure) => ({ error: { name: error.name, code: error.code, message: error.message } }),
      )
    },
    { method, args },
  ) as Promise<{ value?: value; error?: Failure }>
}
/** Stamps `payload` with `stamper` (a consent method answering a Stamper) in the page, with no dialog asked for. */
function stampWith(page: Page, stamper: 'grantStamper' | 'revokeStamper', grantId: string, payload: string) {
  return page.evaluate(
    ({ stamper, grantId, payload }) => {
      const consent = (window as unknown as { consent: Record<string, (id: string) => { stamp(body: string): Promise<unknown> }> }).consent
      return consent[stamper]!(grantId)
        .stamp(payload)
        .then(
          (stamp) => ({ stamp: stamp as { stampHeaderName: string; stampHeaderValue: string }, hidden: document.querySelector('iframe')!.hidden }),
          (error: Failure) => ({ error: { code: error.code, message: error.message }, hidden: document.querySelector('iframe')!.hidden }),
        )
    },
    { stamper, grantId, payload },
  ) as Promise<{ stamp?: { stampHeaderName: string; stampHeaderValue: string }; error?: { code: number; message: string }; hidden: boolean }>
}
const openFrame = async (page: Page) => (await page.locator('iframe').first().elementHandle())!.contentFrame() as Promise<Frame>
async function press(page: Page, frame: Frame, name: 'Approve' | 'Reject') {
  await frame.waitForFunction(() => !(document.getElementById('approve') as HTMLButtonElement).disabled)
  for (let tabs = 0; tabs < 4 && (await frame.evaluate(() => document.activeElement?.textContent)) !== name; tabs++) await page.keyboard.press('Tab')
  expect(await frame.evaluate(() => document.activeElement?.textContent)).toBe(name)
  await page.keyboard.press('Enter')
}

/** The demo's kind of grant, in native token: up to 0.01 ETH a day to anyone, for an hour. */
const grantRequest = (overrides: Record<string, unknown> = {}) => ({
  chainId: toHex(31337),
  expiry: Math.floor(clock.now / 1000) + HOUR,
  permissions: [{ type: 'native-token-recurring-allowance', data: { allowance: toHex(parseEther('0.01')), period: 86_400 } }],
  ...overrides,
})
const createGrantBody = (user: App['user'], request: unknown) =>
  JSON.stringify({
    type: 'ACTIVITY_TYPE_LATCHKEY_CREATE_GRANT',
    timestampMs: String(clock.now),
    organizationId: user.organizationId,
    parameters: toGrantParameters(request, { account: user.address, userId: user.userId, now: clock.now, apiKeyName: 'game' }),
  })
const signTransactionBody = (user: App['user'], value: string, nonce = 0) =>
  JSON.stringify({
    type: 'ACTIVITY_TYPE_SIGN_TRANSACTION_V2',
    timestampMs: String(clock.now),
    organizationId: user.organizationId,
    parameters: {
      signWith: user.address,
      type: 'TRANSACTION_TYPE_ETHEREUM',
      unsignedTransaction: serializeTransaction({
        type: 'eip1559',
        chainId: 31337,
        to: recipient,
        value: parseEther(value),
        nonce,
        gas: 21_000n,
        maxFeePerGas: parseGwei('2'),
        maxPriorityFeePerGas: parseGwei('1'),
      }).slice(2),
    },
  })

/** The user approves `request` in the frame; the kms creates the grant; the frame learns its id. */
async function approveGrant(app: App, request = grantRequest()) {
  const { page, user } = app
  const asked = consentCall<{ stamp: { stampHeaderName: string; stampHeaderValue: string }; payload: string }>(page, 'approveGrant', [
    { method: 'wallet_grantPermissions', params: [request] },
    { account: user.address, chainId: 31337 },
    createGrantBody(user, request),
  ])
  const dialog = page.frameLocator('iframe').getByRole('dialog', { name: 'Grant a permission' })
  await dialog.waitFor()
  const shown = await dialog.locator('dd').allTextContents()
  await press(page, await openFrame(page), 'Approve')
  const { value } = await asked
  const { payload, stamp } = value!
  const grantKey = (JSON.parse(payload) as { parameters: { apiKey: { publicKey: string } } }).parameters.apiKey.publicKey
  const created = (await postStamped({ baseUrl: kms.url }, 'submit/create_grant', payload, stamp)) as {
    activity: { status: string; result: { createGrantResult: { grantId: string } } }
  }
  expect(created.activity.status).toBe('ACTIVITY_STATUS_COMPLETED')
  const { grantId } = created.activity.result.createGrantResult
  expect(await consentCall(page, 'bindGrant', [grantId, grantKey])).toEqual({})
  return { grantId, grantKey, shown, stamp, payload }
}

/** Posts a sign_transaction stamped in the frame; answers the signed transaction, or the refusal as the wallet types it. */
async function submitInGrant(stamp: { stampHeaderName: string; stampHeaderValue: string }, body: string, grantId: string) {
  try {
    const answer = (await postStamped({ baseUrl: kms.url }, 'submit/sign_transaction', body, stamp)) as {
      activity: { result: { signTransactionResult: { signedTransaction: string } } }
    }
    return { signed: answer.activity.result.signTransactionResult.signedTransaction }
  } catch (error) {
    if (!(error instanceof TurnkeyRequestError)) throw error
    const refusal = asGrantRefusal(error, grantId) as GrantRefusedError
    return { refusal: { name: refusal.name, reason: refusal.reason, shortMessage: refusal.shortMessage, details: refusal.details } }
  }
}

describe('grants in the consent frame', { timeout: 90_000 }, () => {
  test('default: the user approves a grant; a transaction inside it is signed with no dialog, by the grant’s own key', async () => {
    const app = await openApp()
    const { grantId, grantKey, shown, stamp, payload } = await approveGrant(app)
    // The expiry in the frame's locale (en), in UTC, through the browser's own Intl, and how far off it is.
    const expiry = await app.page.evaluate(
      (at) => new Intl.DateTimeFormat('en', { dateStyle: 'medium', timeStyle: 'long', timeZone: 'UTC' }).format(at),
      (Math.floor(clock.now / 1000) + HOUR) * 1000,
    )
    expect(shown).toEqual([
      'Anvil A (31337)',
      `${expiry} (in 1 hour)`,
      'this wallet',
      '0.01 ETH per day, network fees included',
      'inside these limits until it expires, without asking you again',
    ])
    // The frame made the grant's key and named it; the stamp is the session key's, over that body.
    expect(grantKey).toMatch(/^0[23][0-9a-f]{64}$/)
    expect(grantKey).not.toBe(app.publicKey)
    expect(verifyApiKeyStamp(stamp.stampHeaderValue, new TextEncoder().encode(payload)).publicKey).toBe(app.publicKey)

    const body = signTransactionBody(app.user, '0.004')
    const signed = await stampWith(app.page, 'grantStamper', grantId, body)
    expect(signed.hidden).toBe(true)
    expect(verifyApiKeyStamp(signed.stamp!.stampHeaderValue, new TextEncoder().encode(body)).publicKey).toBe(grantKey)
    const { signed: transaction } = await submitInGrant(signed.stamp!, body, grantId)
    const serialized = `0x${transaction!.replace(/^0x/, '')}` as `0x${string}`
    expect(parseTransaction(serialized).value).toBe(parseEther('0.004'))
    expect(await recoverTransactionAddress({ serializedTransaction: serialized as never })).toBe(app.user.address)
    await app.page.close()
  })

  test('behavior: axe finds no violations in the grant dialog, light and dark, desktop and phone', async () => {
    const { page, user } = await openApp()
    const request = grantRequest()
    const asked = consentCall(page, 'approveGrant', [
      { method: 'wallet_grantPermissions', params: [request] },
      { account: user.address, chainId: 31337 },
      createGrantBody(user, request),
    ])
    await page.frameLocator('iframe').getByRole('dialog', { name: 'Grant a permission' }).waitFor()
    expect(await dialogViolations(page, await openFrame(page), 'grant')).toEqual([])
    await press(page, await openFrame(page), 'Reject')
    expect(await asked).toEqual({ error: { name: 'ProviderRpcError', code: 4001, message: 'User rejected the request.' } })
    await page.close()
  })

  test('error: past the period’s limit, or once the grant expired, the kms refuses (GrantRefusedError) and signs nothing', async () => {
    const app = await openApp()
    const { grantId, grantKey } = await approveGrant(app)
    const first = signTransactionBody(app.user, '0.006', 0)
    expect((await submitInGrant((await stampWith(app.page, 'grantStamper', grantId, first)).stamp!, first, grantId)).signed).toBeDefined()
    const second = signTransactionBody(app.user, '0.006', 1)
    expect(await submitInGrant((await stampWith(app.page, 'grantStamper', grantId, second)).stamp!, second, grantId)).toEqual({
      refusal: {
        name: 'GrantRefusedError',
        reason: 'GRANT_LIMIT_EXCEEDED',
        shortMessage: 'The permission you granted does not allow this request.',
        // 0.006 ETH and its fee ceiling, 21,000 gas at 2 gwei.
        details: `Grant limit: 0.01 ETH per 1 day; 0.006042 ETH already spent (grant ${grantId})`,
      },
    })

    const later = signTransactionBody(app.user, '0.001', 1)
    const stamp = (await stampWith(app.page, 'grantStamper', grantId, later)).stamp!
    // The grant's key lapses with the grant: the kms no longer accepts its stamp at all.
    clock.now += (HOUR + 1) * 1000
    expect(await submitInGrant(stamp, later, grantId)).toEqual({
      refusal: {
        name: 'GrantRefusedError',
        reason: 'GRANT_EXPIRED',
        shortMessage: 'The permission you granted does not allow this request.',
        details: `rpc error: code = Unauthenticated desc = expired api key publicKey: ${grantKey} (grant ${grantId})`,
      },
    })
    await app.page.close()
  })

  test('behavior: revoking stamps revoke_grant with no dialog; the kms refuses the grant’s key after it, and the frame’s key is gone', async () => {
    const app = await openApp()
    const { grantId } = await approveGrant(app)
    const body = signTransactionBody(app.user, '0.001')
    const stampedBefore = (await stampWith(app.page, 'grantStamper', grantId, body)).stamp!
    const revoke = JSON.stringify({
      type: 'ACTIVITY_TYPE_LATCHKEY_REVOKE_GRANT',
      timestampMs: String(clock.now),
      organizationId: app.user.organizationId,
      parameters: { grantId },
    })
    const revoked = await stampWith(app.page, 'revokeStamper', grantId, revoke)
    expect(revoked.hidden).toBe(true)
    const answer = (await postStamped({ baseUrl: kms.url }, 'submit/revoke_grant', revoke, revoked.stamp!)) as { activity: { status: string } }
    expect(answer.activity.status).toBe('ACTIVITY_STATUS_COMPLETED')
    // A stamp made before the revocation: the kms no longer knows the key.
    const after = await submitInGrant(stampedBefore, body, grantId)
    expect(after.refusal?.name).toBe('GrantRefusedError')
    expect(await stampWith(app.page, 'grantStamper', grantId, body)).toEqual({
      error: { code: -32602, message: `no grant ${grantId} in force here: it was never approved in this frame, has expired or was revoked` },
      hidden: true,
    })
    await app.page.close()
  })

  test('error: a page asking the grant’s key to stamp anything but its account’s transaction gets nothing stamped', async () => {
    const app = await openApp()
    const { grantId } = await approveGrant(app)
    const exportBody = JSON.stringify({
      type: 'ACTIVITY_TYPE_EXPORT_WALLET',
      timestampMs: String(clock.now),
      organizationId: app.user.organizationId,
      parameters: { walletId: 'w', targetPublicKey: `04${'11'.repeat(64)}` },
    })
    expect(await stampWith(app.page, 'grantStamper', grantId, exportBody)).toEqual({
      error: { code: -32602, message: "a grant's key signs transactions only (ACTIVITY_TYPE_SIGN_TRANSACTION_V2), not ACTIVITY_TYPE_EXPORT_WALLET" },
      hidden: true,
    })
    const otherAccount = signTransactionBody({ ...app.user, address: recipient }, '0.001')
    expect(await stampWith(app.page, 'grantStamper', grantId, otherAccount)).toEqual({
      error: { code: -32602, message: `grant ${grantId} signs for ${app.user.address} only` },
      hidden: true,
    })
    // Revoking takes the grant's id only, and stamps nothing else.
    expect(await stampWith(app.page, 'revokeStamper', grantId, exportBody)).toEqual({
      error: { code: -32602, message: `REVOKE_GRANT stamps revoke_grant of grant ${grantId} only` },
      hidden: true,
    })
    expect(await stampWith(app.page, 'grantStamper', 'not-a-grant', signTransactionBody(app.user, '0.001'))).toEqual({
      error: { code: -32602, message: 'no grant not-a-grant in force here: it was never approved in this frame, has expired or was revoked' },
      hidden: true,
    })
    await app.page.close()
  })

  test('error: a grant request without an expiry, or of an unknown permission type, is refused before any dialog', async () => {
    const app = await openApp()
    const { expiry: _, ...noExpiry } = grantRequest()
    const payload = createGrantBody(app.user, grantRequest())
    const ask = (request: unknown) =>
      consentCall(app.page, 'approveGrant', [{ method: 'wallet_grantPermissions', params: [request] }, { account: app.user.address, chainId: 31337 }, payload])
    expect((await ask(noExpiry)).error).toEqual({
      name: 'ProviderRpcError',
      code: -32602,
      message: 'The grant has no expiry: a permission that never ends is refused',
    })
    expect((await ask(grantRequest({ permissions: [{ type: 'native-token-stream', data: {} }] }))).error).toEqual({
      name: 'ProviderRpcError',
      code: -32602,
      message:
        'Unknown permission type "native-token-stream": the wallet can grant only native-token-recurring-allowance, erc20-recurring-allowance, native-token-periodic, erc20-token-periodic, contract-call',
    })
    expect(await app.page.frameLocator('iframe').getByRole('button', { name: 'Approve' }).isVisible()).toBe(false)
    await app.page.close()
  })

  test('behavior: a reset of the frame (the wallet’s sign-out) forgets every grant key; once the kms deleted the session’s key, a stamp made before is refused as expired', async () => {
    const otherKey = generateApiKeyPair()
    const app = await openApp(otherKey)
    const first = await approveGrant(app)
    const second = await approveGrant(app)
    const body = signTransactionBody(app.user, '0.001')
    const stampedBefore = (await stampWith(app.page, 'grantStamper', first.grantId, body)).stamp!

    expect(await consentCall(app.page, 'resetKey', [])).toEqual({})
    for (const { grantId } of [first, second])
      expect(await stampWith(app.page, 'grantStamper', grantId, body)).toEqual({
        error: { code: -32602, message: `no grant ${grantId} in force here: it was never approved in this frame, has expired or was revoked` },
        hidden: true,
      })
    const other = new TurnkeyClient({ baseUrl: kms.url }, new ApiKeyStamper(otherKey))
    const keys = async () => (await other.getApiKeys({ organizationId: app.user.organizationId, userId: app.user.userId })).apiKeys
    const session = (await keys()).find((key) => key.credential.publicKey === app.publicKey)!
    // The backend's sign-out: the session's key deleted in the kms, and with it the grant keys it made.
    await other.deleteApiKeys({
      type: 'ACTIVITY_TYPE_DELETE_API_KEYS',
      timestampMs: String(clock.now),
      organizationId: app.user.organizationId,
      parameters: { userId: app.user.userId, apiKeyIds: [session.apiKeyId] },
    })
    expect((await keys()).map((key) => key.credential.publicKey)).toEqual([otherKey.apiPublicKey])
    expect(await submitInGrant(stampedBefore, body, first.grantId)).toEqual({
      refusal: {
        name: 'GrantRefusedError',
        reason: 'GRANT_EXPIRED',
        shortMessage: 'The permission you granted does not allow this request.',
        details: `could not find public key in organization or its parent organization (grant ${first.grantId})`,
      },
    })
    await app.page.close()
  })
})
