import { createServer, type Server } from 'node:http'
import { fileURLToPath } from 'node:url'
import { getFreePort } from '@latchkey/devnet'
import { createKms, generateApiKeyPair, type Kms, verifyApiKeyStamp } from '@latchkey/kms'
import { ApiKeyStamper } from '@turnkey/api-key-stamper'
import { TurnkeyClient } from '@turnkey/http'
import { generateSync } from 'otplib'
import { type Browser, type BrowserContext, chromium, type Frame, type Page } from 'playwright-core'
import { rolldown } from 'rolldown'
import { concat, recoverMessageAddress, serializeSignature, stringToHex, toBytes, toHex } from 'viem'
import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import { chromiumLaunchOptions } from '../../../test/chromium.js'

// The consent frame in Chromium: a real kms serving its frames, an app page on an allowed origin
// that mounts the frame with mountConsentFrame (bundled from source), and real, trusted clicks
// and key presses from Playwright. What is asserted is what the app and the user observe: the
// dialog, the stamp the kms accepts, the 4001, the errors.

let kms: Kms
let appServer: Server
let appOrigin: string
let browser: Browser
/** One profile for the file, so the frames origin's storage lasts from page to page. */
let context: BrowserContext
let backend: TurnkeyClient
let organizationId: string

const appPage = (bundle: string) => ({
  '/': `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>App</title>
<script type="module">
import { mountConsentFrame } from '/consentFrame.js'
window.mountConsentFrame = mountConsentFrame
/** The frame's protocol spoken by hand, as a hostile page script could: a raw channel to a second frame. */
window.rawChannel = (framesUrl) => new Promise((resolve) => {
  const iframe = document.createElement('iframe')
  iframe.src = framesUrl + '/consent'
  iframe.style.cssText = 'width: 480px; height: 480px; border: 0'
  const channel = new MessageChannel()
  // Replies in the order they come; an id may be asked more than once (that is what the replays do).
  const waiting = []
  channel.port1.onmessage = (event) => {
    const reply = event.data
    if (reply.type === 'PUBLIC_KEY_READY') return resolve({ publicKey: reply.value, iframe, request, post })
    const index = waiting.findIndex((entry) => entry.requestId === reply.requestId)
    if (index >= 0) waiting.splice(index, 1)[0].done(reply)
  }
  function post(message) { channel.port1.postMessage(message) }
  function request(message) {
    return new Promise((done) => { waiting.push({ requestId: message.requestId, done }); post(message) })
  }
  iframe.addEventListener('load', () => iframe.contentWindow.postMessage({ type: 'TURNKEY_INIT_MESSAGE_CHANNEL' }, new URL(framesUrl).origin, [channel.port2]), { once: true })
  document.body.append(iframe)
})
window.appReady = true
</script></head><body><h1>App</h1><button type="button">Behind the frame</button></body></html>`,
  '/consentFrame.js': bundle,
})

beforeAll(async () => {
  const appPort = await getFreePort()
  appOrigin = `http://localhost:${appPort}`
  kms = createKms({ port: await getFreePort(), frames: { port: await getFreePort(), parentOrigins: [appOrigin] } })
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
  context = await browser.newContext()
}, 120_000)

afterAll(async () => {
  await browser?.close()
  await new Promise((resolve) => appServer?.close(resolve))
  await kms?.stop()
})

/** A fresh app page with the consent frame mounted; its public key and the frame's document. */
async function openApp(): Promise<{ page: Page; publicKey: string; frame: Frame; warnings: string[] }> {
  const page = await context.newPage()
  const warnings: string[] = []
  page.on('console', (message) => {
    if (message.type() === 'warning' || message.type() === 'error') warnings.push(message.text())
  })
  await page.goto(appOrigin)
  await page.waitForFunction(() => (window as { appReady?: boolean }).appReady === true)
  const publicKey = await page.evaluate(async (framesUrl) => {
    const scope = window as unknown as { mountConsentFrame: (p: { framesUrl: string }) => Promise<{ publicKey: string }>; consent: unknown }
    const consent = await scope.mountConsentFrame({ framesUrl })
    scope.consent = consent
    return consent.publicKey
  }, kms.framesUrl!)
  const frame = page.frames().find((candidate) => candidate.url() === `${kms.framesUrl}/consent`)!
  return { page, publicKey, frame, warnings }
}

const users = new Map<string, Promise<{ organizationId: string; address: `0x${string}` }>>()
/**
 * A sub-organization whose one user's API key is the frame's key, with an Ethereum wallet; one per
 * key (the frame keeps one key per app origin, and the kms registers a key once).
 */
function userWithKey(publicKey: string) {
  if (!users.has(publicKey)) users.set(publicKey, createUser(publicKey))
  return users.get(publicKey)!
}

async function createUser(publicKey: string) {
  const { activity } = await backend.createSubOrganization({
    type: 'ACTIVITY_TYPE_CREATE_SUB_ORGANIZATION_V8',
    timestampMs: String(Date.now()),
    organizationId,
    parameters: {
      subOrganizationName: `consent ${publicKey.slice(2, 12)}`,
      rootQuorumThreshold: 1,
      rootUsers: [
        { userName: 'user', apiKeys: [{ apiKeyName: 'consent frame', publicKey, curveType: 'API_KEY_CURVE_P256' }], authenticators: [], oauthProviders: [] },
      ],
      wallet: {
        walletName: 'Wallet',
        accounts: [{ curve: 'CURVE_SECP256K1', pathFormat: 'PATH_FORMAT_BIP32', path: "m/44'/60'/0'/0/0", addressFormat: 'ADDRESS_FORMAT_ETHEREUM' }],
      },
    },
  })
  const result = activity.result.createSubOrganizationResultV8!
  return { organizationId: result.subOrganizationId!, address: result.wallet!.addresses[0] as `0x${string}` }
}

/** The exact body the embedded wallet sends for personal_sign: sign_raw_payload of the EIP-191 preimage, hashed by the kms. */
const signMessageBody = (subOrganizationId: string, address: string, message: string) =>
  JSON.stringify({
    type: 'ACTIVITY_TYPE_SIGN_RAW_PAYLOAD_V2',
    timestampMs: String(Date.now()),
    organizationId: subOrganizationId,
    parameters: {
      signWith: address,
      payload: concat([stringToHex(`\x19Ethereum Signed Message:\n${toBytes(message).length}`), toHex(message)]),
      encoding: 'PAYLOAD_ENCODING_HEXADECIMAL',
      hashFunction: 'HASH_FUNCTION_KECCAK256',
    },
  })

type Outcome = { stamp?: { stampHeaderName: string; stampHeaderValue: string } | undefined; error?: { name: string; code: number; message: string } }

/** Asks the mounted frame to review personal_sign of `message` and stamp `body`; the outcome is kept on `window.outcome`. */
function askToSign(page: Page, parameters: { message: string; account: string; body: string }) {
  return page.evaluate(({ message, account, body }) => {
    const scope = window as unknown as {
      consent: { stamper(request: unknown, context: unknown): { stamp(payload: string): Promise<Outcome['stamp']> } }
      outcome: Promise<Outcome>
    }
    scope.outcome = scope.consent
      .stamper({ method: 'personal_sign', params: [message, account] }, { account, chainId: 31337 })
      .stamp(body)
      .then(
        (stamp) => ({ stamp }),
        (error: { name: string; code: number; message: string }) => ({ error: { name: error.name, code: error.code, message: error.message } }),
      )
  }, parameters)
}
const outcome = (page: Page) => page.evaluate(() => (window as unknown as { outcome: Promise<Outcome> }).outcome)
const openFrame = async (page: Page, index: number) => (await page.locator('iframe').nth(index).elementHandle())?.contentFrame()
const frameIsShown = (page: Page) => page.evaluate(() => !document.querySelector('iframe')!.hidden)
/** A real key press on the dialog's button `name` (Tab from the heading until it has focus, then Enter): a trusted activation, as a user's. */
async function press(page: Page, frame: Frame, name: 'Approve' | 'Reject') {
  await approveEnabled(frame)
  for (let tabs = 0; tabs < 4 && (await frame.evaluate(() => document.activeElement?.textContent)) !== name; tabs++) await page.keyboard.press('Tab')
  expect(await frame.evaluate(() => document.activeElement?.textContent)).toBe(name)
  await page.keyboard.press('Enter')
}
const approveEnabled = (frame: Frame) => frame.waitForFunction(() => !(document.getElementById('approve') as HTMLButtonElement).disabled)

describe('consent frame', { timeout: 90_000 }, () => {
  test('default: the user reads the message, approves with a real key press on Approve, and the kms accepts the stamp', async () => {
    const { page, publicKey } = await openApp()
    expect(publicKey).toMatch(/^0[23][0-9a-f]{64}$/)
    const user = await userWithKey(publicKey)
    expect(await frameIsShown(page)).toBe(false)
    const body = signMessageBody(user.organizationId, user.address, 'hello consent')
    await askToSign(page, { message: 'hello consent', account: user.address, body })

    const dialog = page.frameLocator('iframe').getByRole('dialog', { name: 'Sign a message' })
    await dialog.waitFor()
    expect(await frameIsShown(page)).toBe(true)
    expect(await dialog.getByText(`Requested by ${appOrigin}`).isVisible()).toBe(true)
    expect(await dialog.locator('dd').allTextContents()).toEqual(['hello consent'])
    await press(page, (await openFrame(page, 0))!, 'Approve')

    const { stamp } = await outcome(page)
    expect(stamp!.stampHeaderName).toBe('X-Stamp')
    expect(verifyApiKeyStamp(stamp!.stampHeaderValue, new TextEncoder().encode(body))).toEqual({ publicKey, scheme: 'SIGNATURE_SCHEME_TK_API_P256' })
    expect(await frameIsShown(page)).toBe(false)

    const response = await fetch(`${kms.url}/public/v1/submit/sign_raw_payload`, { method: 'POST', headers: { 'X-Stamp': stamp!.stampHeaderValue }, body })
    const { activity } = (await response.json()) as { activity: { status: string; result: { signRawPayloadResult: { r: string; s: string; v: string } } } }
    expect(activity.status).toBe('ACTIVITY_STATUS_COMPLETED')
    const { r, s, v } = activity.result.signRawPayloadResult
    const signature = serializeSignature({ r: `0x${r}`, s: `0x${s}`, yParity: Number.parseInt(v, 16) })
    expect(await recoverMessageAddress({ message: 'hello consent', signature })).toBe(user.address)
    await page.close()
  })

  test('behavior: a read-only query is stamped with no prompt; an activity sent as a query is refused and stamps nothing', async () => {
    const { page, publicKey } = await openApp()
    const user = await userWithKey(publicKey)
    const query = JSON.stringify({ organizationId: user.organizationId })
    const answers = await page.evaluate(
      async ({ query, activity }) => {
        type QueryStamper = { stamp(payload: string): Promise<{ stampHeaderValue: string }> }
        const { queryStamper } = (window as unknown as { consent: { queryStamper: QueryStamper } }).consent
        const stamp = await queryStamper.stamp(query)
        const refused = await queryStamper.stamp(activity).then(
          () => undefined,
          (error: { code: number; message: string }) => ({ code: error.code, message: error.message }),
        )
        return { stamp, refused, hidden: document.querySelector('iframe')!.hidden }
      },
      { query, activity: signMessageBody(user.organizationId, user.address, 'not through the dialog') },
    )
    expect(answers.refused).toEqual({
      code: -32602,
      message: 'STAMP_QUERY stamps read-only queries only: an activity (a body with type or parameters) needs REVIEW_AND_STAMP',
    })
    expect(answers.hidden).toBe(true)
    const response = await fetch(`${kms.url}/public/v1/query/whoami`, { method: 'POST', headers: { 'X-Stamp': answers.stamp.stampHeaderValue }, body: query })
    expect([response.status, await response.json()]).toEqual([200, expect.objectContaining({ organizationId: user.organizationId })])
    await page.close()
  })

  test('behavior: the key stays in the frame across reloads; the page never sees more than the public key', async () => {
    const first = await openApp()
    const again = await openApp()
    expect(again.publicKey).toBe(first.publicKey)
    // The key lives in the frames origin: the app origin's storage holds nothing of it.
    expect(await first.page.evaluate(async () => (await indexedDB.databases()).map((database) => database.name))).toEqual([])
    expect(
      await first.frame.evaluate(
        () =>
          new Promise((resolve) => {
            const open = indexedDB.open('latchkey-frames')
            open.onsuccess = () => {
              const request = open.result.transaction('keys').objectStore('keys').getAll()
              request.onsuccess = () => resolve(request.result.map((stored: { privateKey: CryptoKey }) => stored.privateKey.extractable))
            }
          }),
      ),
    ).toEqual([false])
    await first.page.close()
    await again.page.close()
  })

  test('error: Reject answers 4001 and stamps nothing', async () => {
    const { page, frame } = await openApp()
    const account = '0x000000000000000000000000000000000000dEaD'
    const body = signMessageBody('org', account, 'no')
    await askToSign(page, { message: 'no', account, body })
    await press(page, frame, 'Reject')
    expect(await outcome(page)).toEqual({ error: { name: 'ProviderRpcError', code: 4001, message: 'User rejected the request.' } })
    expect(await frameIsShown(page)).toBe(false)

    await page.close()
  })

  test('behavior: mounted with locale "ar", the frame\'s dialog is right-to-left and in Arabic; the rejection keeps its API text', async () => {
    const page = await context.newPage()
    await page.goto(appOrigin)
    await page.waitForFunction(() => (window as { appReady?: boolean }).appReady === true)
    await page.evaluate(async (framesUrl) => {
      const scope = window as unknown as { mountConsentFrame: (p: { framesUrl: string; locale: string }) => Promise<unknown>; consent: unknown }
      scope.consent = await scope.mountConsentFrame({ framesUrl, locale: 'ar-EG' })
    }, kms.framesUrl!)
    expect(await page.evaluate(() => document.querySelector('iframe')!.src)).toBe(`${kms.framesUrl}/consent?locale=ar-EG`)
    const account = '0x000000000000000000000000000000000000dEaD'
    await askToSign(page, { message: 'مرحبا', account, body: signMessageBody('org', account, 'مرحبا') })
    const dialog = page.frameLocator('iframe').getByRole('dialog', { name: 'توقيع رسالة' })
    await dialog.waitFor()
    const frame = (await openFrame(page, 0))!
    expect(await frame.evaluate(() => [document.documentElement.lang, document.documentElement.dir])).toEqual(['ar', 'rtl'])
    expect(await dialog.getByRole('button').allTextContents()).toEqual(['رفض', 'موافقة'])
    await dialog.getByRole('button', { name: 'رفض' }).press('Enter')
    expect(await outcome(page)).toEqual({ error: { name: 'ProviderRpcError', code: 4001, message: 'User rejected the request.' } })
    await page.close()
  })

  test('behavior: focus moves into the dialog, Tab stays there, Escape answers 4001', async () => {
    const { page, frame } = await openApp()
    const account = '0x000000000000000000000000000000000000dEaD'
    await askToSign(page, { message: 'keys', account, body: signMessageBody('org', account, 'keys') })
    await page.frameLocator('iframe').getByRole('dialog', { name: 'Sign a message' }).waitFor()
    await approveEnabled(frame)
    const focused = () => frame.evaluate(() => document.activeElement?.textContent ?? '')
    expect(await focused()).toBe('Sign a message')
    const seen: string[] = []
    for (const key of ['Tab', 'Tab', 'Tab', 'Tab', 'Shift+Tab', 'Shift+Tab']) {
      await page.keyboard.press(key)
      seen.push(await focused())
    }
    // The raw bytes' disclosure, then the two buttons, and round again.
    expect(seen).toEqual(['Raw data', 'Reject', 'Approve', 'Raw data', 'Approve', 'Reject'])
    await page.keyboard.press('Escape')
    expect(await outcome(page)).toEqual({ error: { name: 'ProviderRpcError', code: 4001, message: 'User rejected the request.' } })
    await page.close()
  })

  test('error: a click a script makes on Approve, inside the frame itself, is ignored', async () => {
    const { page, frame, warnings } = await openApp()
    const account = '0x000000000000000000000000000000000000dEaD'
    await askToSign(page, { message: 'forged', account, body: signMessageBody('org', account, 'forged') })
    await approveEnabled(frame)
    const logged = page.waitForEvent('console', {
      predicate: (message) => message.text().includes('ignored a click on Approve that a script made'),
      timeout: 5000,
    })
    await frame.evaluate(() => {
      const approve = document.getElementById('approve')!
      approve.click()
      approve.dispatchEvent(new MouseEvent('click', { bubbles: true }))
    })
    await logged
    // Still waiting for the user: their answer (Escape) is what ends it.
    await page.keyboard.press('Escape')
    expect(await outcome(page)).toEqual({ error: { name: 'ProviderRpcError', code: 4001, message: 'User rejected the request.' } })
    expect(warnings.filter((text) => text.includes('ignored a click'))).toHaveLength(2)
    await page.close()
  })

  test('error: messages a page forges get no stamp; a replayed request id gets an error', async () => {
    const { page } = await openApp()
    const raw = await page.evaluate(async (framesUrl) => {
      const scope = window as unknown as { rawChannel(url: string): Promise<{ publicKey: string }>; raw: unknown }
      scope.raw = await scope.rawChannel(framesUrl)
      return (scope.raw as { publicKey: string }).publicKey
    }, kms.framesUrl!)
    const user = await userWithKey(raw)
    const body = signMessageBody(user.organizationId, user.address, 'once')
    type Raw = { request(message: unknown): Promise<unknown>; post(message: unknown): void }
    // The page asks for a review, then tries to answer it itself, in every way the protocol might allow.
    await page.evaluate(
      ({ body, account }) => {
        const raw = (window as unknown as { raw: Raw; answers: Promise<unknown[]> }).raw
        const review = {
          type: 'REVIEW_AND_STAMP',
          requestId: 'r1',
          value: { request: { method: 'personal_sign', params: ['once', account] }, payload: body, context: { account, chainId: 1 } },
        }
        ;(window as unknown as { answers: Promise<unknown[]> }).answers = Promise.all([
          raw.request(review),
          raw.request({ type: 'APPROVE', requestId: 'r2', value: 'r1' }),
          raw.request({ type: 'STAMP_REQUEST', requestId: 'r3', value: body }),
          raw.request({ type: 'STAMP', requestId: 'r1', value: true }),
        ])
      },
      { body, account: user.address },
    )
    await page.frameLocator('iframe').nth(1).getByRole('dialog').waitFor()
    await page.locator('iframe').nth(1).focus()
    await press(page, (await openFrame(page, 1))!, 'Reject')
    expect(await page.evaluate(() => (window as unknown as { answers: Promise<unknown[]> }).answers)).toEqual([
      { type: 'ERROR', value: { code: 4001, message: 'User rejected the request.' }, requestId: 'r1' },
      { type: 'ERROR', value: 'the consent frame does not handle APPROVE', requestId: 'r2' },
      { type: 'ERROR', value: 'the consent frame does not handle STAMP_REQUEST', requestId: 'r3' },
      { type: 'ERROR', value: 'the consent frame does not handle STAMP', requestId: 'r1' },
    ])

    // An approved request id cannot be used again, even for the same body.
    const ask = (requestId: string, payload: string) =>
      page.evaluate(
        ({ requestId, payload, account }) => {
          const scope = window as unknown as { raw: Raw; answer: Promise<unknown> }
          scope.answer = scope.raw.request({
            type: 'REVIEW_AND_STAMP',
            requestId,
            value: { request: { method: 'personal_sign', params: ['once', account] }, payload, context: { account, chainId: 1 } },
          })
        },
        { requestId, payload, account: user.address },
      )
    const answer = () => page.evaluate(() => (window as unknown as { answer: Promise<{ type: string; value: unknown }> }).answer)
    await ask('r4', body)
    await page.frameLocator('iframe').nth(1).getByRole('dialog').waitFor()
    await page.locator('iframe').nth(1).focus()
    await press(page, (await openFrame(page, 1))!, 'Approve')
    expect((await answer()).type).toBe('STAMP')
    await ask('r4', body)
    expect(await answer()).toEqual({ type: 'ERROR', value: { code: -32602, message: 'request id r4 was already used' }, requestId: 'r4' })
    await ask('r1', body)
    expect(await answer()).toEqual({ type: 'ERROR', value: { code: -32602, message: 'request id r1 was already used' }, requestId: 'r1' })
    // A payload that is not the reviewed message is refused before anything shows.
    await ask('r5', signMessageBody(user.organizationId, user.address, 'something else'))
    expect(await answer()).toEqual({
      type: 'ERROR',
      value: { code: -32602, message: 'the payload does not sign this message with this account' },
      requestId: 'r5',
    })
    await page.close()
  })

  test('error: a window of another origin cannot open the frame’s channel', async () => {
    const { page, frame } = await openApp()
    // A sibling frame of a foreign origin (127.0.0.1 is not the allowed localhost) tries the handshake.
    const refusal = await page.evaluate(
      async (foreign) => {
        const sibling = document.createElement('iframe')
        sibling.src = `${foreign}/`
        document.body.append(sibling)
        await new Promise((resolve) => sibling.addEventListener('load', resolve, { once: true }))
        return 'mounted'
      },
      appOrigin.replace('localhost', '127.0.0.1'),
    )
    expect(refusal).toBe('mounted')
    const foreign = page.frames().find((candidate) => candidate.url().startsWith('http://127.0.0.1'))!
    const answer = await foreign.evaluate(
      () =>
        new Promise((resolve) => {
          const channel = new MessageChannel()
          channel.port1.onmessage = (event) => resolve({ onPort: event.data })
          window.addEventListener('message', (event) => resolve({ onWindow: event.data }))
          parent.frames[0]!.postMessage({ type: 'TURNKEY_INIT_MESSAGE_CHANNEL' }, '*', [channel.port2])
        }),
    )
    expect(answer).toEqual({ onWindow: { type: 'ERROR', value: 'the channel must be opened by the page that embeds this frame' } })
    expect(frame.isDetached()).toBe(false)
    await page.close()
  })
})

describe('second factor in the consent frame', { timeout: 90_000 }, () => {
  test('default: secondFactor enrols TOTP and then verifies it; the page carries only stamped bodies and sealed answers', async () => {
    // A profile of its own: a new frame key, so a new user (its factor stays out of the other tests).
    const own = await browser.newContext()
    const page = await own.newPage()
    const carried: string[] = []
    await page.exposeFunction('carryMfa', async (submit: { op: string; body: string; stampHeaderName: string; stampHeaderValue: string }) => {
      const response = await fetch(`${kms.url}/public/v1/submit/${submit.op}`, {
        method: 'POST',
        headers: { [submit.stampHeaderName]: submit.stampHeaderValue },
        body: submit.body,
      })
      const answer = { status: response.status, body: await response.json() }
      carried.push(JSON.stringify(submit), JSON.stringify(answer))
      return answer
    })
    await page.goto(appOrigin)
    await page.waitForFunction(() => (window as { appReady?: boolean }).appReady === true)
    const publicKey = await page.evaluate(async (framesUrl) => {
      const scope = window as unknown as { mountConsentFrame: (p: { framesUrl: string }) => Promise<{ publicKey: string }>; consent: unknown }
      scope.consent = await scope.mountConsentFrame({ framesUrl })
      return (scope.consent as { publicKey: string }).publicKey
    }, kms.framesUrl!)
    const { activity } = await backend.createSubOrganization({
      type: 'ACTIVITY_TYPE_CREATE_SUB_ORGANIZATION_V8',
      timestampMs: String(Date.now()),
      organizationId,
      parameters: {
        subOrganizationName: `mfa ${publicKey.slice(2, 12)}`,
        rootQuorumThreshold: 1,
        rootUsers: [
          { userName: 'user', apiKeys: [{ apiKeyName: 'consent frame', publicKey, curveType: 'API_KEY_CURVE_P256' }], authenticators: [], oauthProviders: [] },
        ],
      },
    })
    const created = activity.result.createSubOrganizationResultV8!
    const user = { organizationId: created.subOrganizationId!, userId: created.rootUserIds![0]! }
    const ask = (request: unknown) =>
      page.evaluate((request) => {
        const scope = window as unknown as {
          consent: { secondFactor(request: unknown, carry: unknown): Promise<unknown> }
          carryMfa: unknown
          mfaOutcome: Promise<unknown>
        }
        scope.mfaOutcome = scope.consent.secondFactor(request, scope.carryMfa).catch((error: { name: string; code: number; message: string }) => ({
          error: { name: error.name, code: error.code, message: error.message },
        }))
      }, request)
    const mfaOutcome = () => page.evaluate(() => (window as unknown as { mfaOutcome: Promise<unknown> }).mfaOutcome)
    const frame = (await openFrame(page, 0))!
    const typeCode = async (code: string) => {
      await frame.getByRole('textbox', { name: 'Authentication code' }).press(code[0]!)
      await page.keyboard.type(code.slice(1))
      await page.keyboard.press('Enter')
    }
    const codeOf = (secret: string, offsetSeconds = 0) => generateSync({ secret, epoch: Math.floor(Date.now() / 1000) + offsetSeconds })

    await ask({ type: 'ENROLL_TOTP', value: user })
    await frame.getByRole('dialog', { name: 'Set up your authenticator app' }).waitFor()
    expect(await frameIsShown(page)).toBe(true)
    const secret = (await frame.getByRole('group', { name: 'Secret' }).locator('#mfa-secret').textContent())!.replaceAll(' ', '')
    await typeCode(codeOf(secret))
    await frame.getByRole('dialog', { name: 'Save your recovery codes' }).waitFor()
    const recoveryCodes = await frame.getByRole('list', { name: 'Recovery codes' }).getByRole('listitem').allTextContents()
    expect(recoveryCodes).toHaveLength(10)
    await frame.getByRole('button', { name: 'Done' }).click()
    const enrolled = (await mfaOutcome()) as { type: string; value: { factorId: string } }
    expect(enrolled).toEqual({ type: 'TOTP_ENROLLED', value: { factorId: expect.stringMatching(/^[0-9a-f-]{36}$/) } })
    expect(await frameIsShown(page)).toBe(false)

    await ask({ type: 'VERIFY_MFA', value: { organizationId: user.organizationId, factorId: enrolled.value.factorId } })
    await frame.getByRole('dialog', { name: 'Confirm it is you' }).waitFor()
    await typeCode(codeOf(secret, 30))
    expect(await mfaOutcome()).toEqual({ type: 'MFA_VERIFIED', value: { verified: true } })
    expect(await frameIsShown(page)).toBe(false)

    // Everything the page carried: bodies with the codes the user typed, and sealed answers.
    expect(carried.map((text) => JSON.parse(text).op ?? JSON.parse(text).status)).toEqual([
      'create_totp_factor',
      200,
      'verify_mfa_factor',
      200,
      'verify_mfa_factor',
      200,
    ])
    for (const text of [secret, ...recoveryCodes]) expect(carried.join('\n')).not.toContain(text)
    await own.close()
  })

  test('error: Cancel in the frame is ProviderRpcError 4001', async () => {
    const { page } = await openApp()
    await page.evaluate(() => {
      const scope = window as unknown as { consent: { secondFactor(request: unknown, carry: unknown): Promise<unknown> }; mfaOutcome: Promise<unknown> }
      scope.mfaOutcome = scope.consent
        .secondFactor({ type: 'VERIFY_MFA', value: { organizationId: 'org', factorId: 'factor' } }, async () => ({ status: 500, body: {} }))
        .catch((error: { name: string; code: number; message: string }) => ({ error: { name: error.name, code: error.code, message: error.message } }))
    })
    const frame = (await openFrame(page, 0))!
    await frame.getByRole('dialog', { name: 'Confirm it is you' }).waitFor()
    await frame.getByRole('button', { name: 'Cancel' }).click()
    expect(await page.evaluate(() => (window as unknown as { mfaOutcome: Promise<unknown> }).mfaOutcome)).toEqual({
      error: { name: 'ProviderRpcError', code: 4001, message: 'User rejected the request.' },
    })
    expect(await frameIsShown(page)).toBe(false)
    await page.close()
  })
})
