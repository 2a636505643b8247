import { mkdtemp } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { type BrowserContext, chromium, type FrameLocator, type Locator, type Page } from 'playwright-core'
import { getTypesForEIP712Domain, maxUint256, parseEther, parseGwei, serializeTransaction, serializeTypedData, stringToHex, toHex } from 'viem'
import { afterEach, describe, expect, inject, test } from 'vitest'
import { toGrantParameters } from '../packages/embedded/src/permissions.js'
import { chromiumLaunchOptions } from '../test/chromium.js'
import { compareImage } from './screenshot.js'

// Screenshot tests of the consent frame's main dialogs (message, transaction with its simulation,
// typed data, grant) in {light, dark} × {desktop 1280×800, phone 390×844} × {en, ar}, compared with
// the PNGs in e2e/screenshots/ as e2e/screenshots.e2e.ts compares the app's modals. The demo's page
// is the parent (its origin is one the kms's frames accept): it mounts the frame over the whole
// viewport and asks REVIEW_AND_STAMP by hand, then rejects each request from the keyboard. One page
// per theme × viewport × locale. The pages' clock is held at one instant (SHOT_TIME), so the dates
// lay out alike on any day. What moves is masked: the parent's origin (a free port), the dates with
// how far off they are (the permit's deadline, the grant's expiry; their rows keep their height),
// and "Approve", which arms when the browser reports the dialog visible.
//
//   LATCHKEY_UPDATE_SCREENSHOTS=1 npx vitest run --config e2e/vitest.config.ts e2e/frameScreenshots.e2e.ts
//
// rewrites the images (an intended change commits them with it).

const stack = inject('stack')
const directory = join(import.meta.dirname, 'screenshots')
const artifacts = join(import.meta.dirname, '.artifacts', 'screenshots')
const update = process.env['LATCHKEY_UPDATE_SCREENSHOTS'] === '1'

const viewports = {
  desktop: { viewport: { width: 1280, height: 800 } },
  phone: { viewport: { width: 390, height: 844 }, deviceScaleFactor: 1, isMobile: true, hasTouch: true },
} as const

const account = '0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266'
const recipient = '0x70997970C51812dc3A010C7d01b50e0d17dc79C8'
const token = '0x5FbDB2315678afecb367f032d93F642f64180aa3'
const activity = (type: string, parameters: unknown) => JSON.stringify({ type, timestampMs: '1', organizationId: 'org', parameters })

const message = {
  request: { method: 'personal_sign', params: ['0x68656c6c6f', account] },
  payload: activity('ACTIVITY_TYPE_SIGN_RAW_PAYLOAD_V2', {
    signWith: account,
    payload: stringToHex('\x19Ethereum Signed Message:\n5hello').slice(2),
    encoding: 'PAYLOAD_ENCODING_HEXADECIMAL',
    hashFunction: 'HASH_FUNCTION_KECCAK256',
  }),
  context: { account, chainId: 31337 },
}
/** Its gas and price named, so the fee reads "up to" a fixed amount, not the chain's estimate of the moment. */
const transaction = {
  request: {
    method: 'eth_sendTransaction',
    params: [{ from: account, to: recipient, value: '0xde0b6b3a7640000', gas: '0x5208', maxFeePerGas: '0x77359400', maxPriorityFeePerGas: '0x3b9aca00' }],
  },
  payload: activity('ACTIVITY_TYPE_SIGN_TRANSACTION_V2', {
    signWith: account,
    type: 'TRANSACTION_TYPE_ETHEREUM',
    unsignedTransaction: serializeTransaction({
      type: 'eip1559',
      chainId: 31337,
      to: recipient,
      value: parseEther('1'),
      nonce: 0,
      gas: 21_000n,
      maxFeePerGas: parseGwei('2'),
      maxPriorityFeePerGas: parseGwei('1'),
    }).slice(2),
  }),
  context: { account, chainId: 31337 },
}
const permit = {
  domain: { name: 'Token', version: '1', chainId: 31337, verifyingContract: token },
  types: {
    Permit: [
      { name: 'owner', type: 'address' },
      { name: 'spender', type: 'address' },
      { name: 'value', type: 'uint256' },
      { name: 'nonce', type: 'uint256' },
      { name: 'deadline', type: 'uint256' },
    ],
  },
  primaryType: 'Permit',
  message: { owner: account, spender: recipient, value: maxUint256, nonce: 0n, deadline: 1924992000n },
} as const
const permitJson = serializeTypedData({ ...permit, types: { EIP712Domain: getTypesForEIP712Domain({ domain: permit.domain }), ...permit.types } } as Parameters<
  typeof serializeTypedData
>[0])
const typedData = {
  request: { method: 'eth_signTypedData_v4', params: [account, permitJson] },
  payload: activity('ACTIVITY_TYPE_SIGN_RAW_PAYLOAD_V2', {
    signWith: account,
    payload: permitJson,
    encoding: 'PAYLOAD_ENCODING_EIP712',
    hashFunction: 'HASH_FUNCTION_NOT_APPLICABLE',
  }),
  context: { account, chainId: 31337 },
}
/** The instant the pages' clocks are held at (a grant must not have expired: the kms checks that at submission, which these tests never reach). */
const SHOT_TIME = Date.UTC(2026, 5, 15, 12, 0, 0)

/** The demo's kind of grant: up to 0.01 ETH a day, for an hour from `now` (the pages' held clock). */
function grant(now: number) {
  const request = {
    chainId: toHex(31337),
    expiry: Math.floor(now / 1000) + 3600,
    permissions: [{ type: 'native-token-recurring-allowance', data: { allowance: toHex(parseEther('0.01')), period: 86_400 } }],
  }
  return {
    request: { method: 'wallet_grantPermissions', params: [request] },
    payload: JSON.stringify({
      type: 'ACTIVITY_TYPE_LATCHKEY_CREATE_GRANT',
      timestampMs: String(now),
      organizationId: 'org',
      parameters: toGrantParameters(request, { account, userId: 'user', now, apiKeyName: 'game' }),
    }),
    context: { account, chainId: 31337 },
  }
}

/** Mounts the consent frame over the whole viewport, its channel open: `window.ask(id, value)` asks, `window.answer` is the answer. */
const mount = (framesUrl: string, locale: string) =>
  `new Promise((resolve) => {
    const iframe = document.createElement('iframe')
    iframe.src = ${JSON.stringify(framesUrl)} + '/consent?locale=${locale}'
    iframe.style.cssText = 'position: fixed; inset: 0; width: 100vw; height: 100vh; border: 0; z-index: 2147483647; background: Canvas'
    const channel = new MessageChannel()
    const waiting = new Map()
    channel.port1.onmessage = (event) => {
      if (event.data.type === 'PUBLIC_KEY_READY') return resolve(true)
      waiting.get(event.data.requestId)?.(event.data)
    }
    window.ask = (requestId, value) => { window.answer = new Promise((done) => waiting.set(requestId, done)); channel.port1.postMessage({ type: 'REVIEW_AND_STAMP', requestId, value }) }
    iframe.addEventListener('load', () => iframe.contentWindow.postMessage({ type: 'TURNKEY_INIT_MESSAGE_CHANNEL' }, new URL(${JSON.stringify(framesUrl)}).origin, [channel.port2]), { once: true })
    document.body.append(iframe)
  })`

type Theme = 'light' | 'dark'
type Viewport = keyof typeof viewports
type Locale = 'en' | 'ar'

const combinations = (['light', 'dark'] as const).flatMap((theme) =>
  (['desktop', 'phone'] as const).flatMap((viewport) => (['en', 'ar'] as const).map((locale) => [theme, viewport, locale] as [Theme, Viewport, Locale])),
)

let context: BrowserContext | undefined
afterEach(async () => {
  await context?.close()
  context = undefined
})

/** Shoots the viewport, `mask` and "Approve" painted over: it arms when the browser says the dialog is seen whole, at a moment of its own. */
async function shoot(page: Page, name: string, mask: Locator[]): Promise<string> {
  const approve = page.frameLocator('iframe[src*="/consent?locale="]').locator('#approve')
  const image = await page.screenshot({ animations: 'disabled', caret: 'hide', mask: [...mask, approve], maskColor: '#808080' })
  return compareImage(name, image, { directory, artifacts, update })
}

/** Asks `value`, waits for its dialog (and its simulation's answer), shoots it, rejects it from the keyboard. */
async function dialog(page: Page, frame: FrameLocator, id: string, value: unknown, settled?: string) {
  await page.evaluate(({ id, value }) => (window as unknown as { ask(id: string, value: unknown): void }).ask(id, value), { id, value })
  await frame.getByRole('dialog').waitFor()
  if (settled) await expect.poll(() => frame.locator('#review-simulation').textContent(), { timeout: 20_000 }).toBe(settled)
  return async () => {
    await frame.locator('#reject').focus()
    await page.keyboard.press('Enter')
    expect(await page.evaluate(() => (window as unknown as { answer: Promise<{ type: string }> }).answer)).toMatchObject({ type: 'ERROR', requestId: id })
  }
}

describe('consent frame screenshots', () => {
  test.each(combinations)(
    "behavior: the frame's message, transaction, typed-data and grant dialogs match their images (%s, %s, %s)",
    async (theme, viewport, locale) => {
      context = await chromium.launchPersistentContext(await mkdtemp(join(tmpdir(), 'latchkey-frame-shots-')), {
        ...chromiumLaunchOptions,
        ...viewports[viewport],
        colorScheme: theme,
        reducedMotion: 'reduce',
        locale: 'en-US',
      })
      // The dates the dialogs show, and how far off they read, come from the page's clock: held
      // at one instant, they lay out the same on any day (a date wraps on a phone by its length).
      await context.clock.setFixedTime(SHOT_TIME)
      const page = context.pages()[0] ?? (await context.newPage())
      const errors: string[] = []
      page.on('pageerror', (error) => errors.push(error.message))
      await page.goto(stack.demo)
      await page.evaluate(mount(stack.frames, locale))
      const frame = page.frameLocator('iframe[src*="/consent?locale="]')
      const origin = frame.locator('#review-origin')
      const name = (state: string) => `frame-${state}-${theme}-${viewport}-${locale}`
      const found: string[] = []

      let reject = await dialog(page, frame, 'message', message)
      found.push(await shoot(page, name('message'), [origin]))
      await reject()
      reject = await dialog(
        page,
        frame,
        'transaction',
        transaction,
        locale === 'ar' ? 'ترسل \u20681 ETH\u2069. لا تتلقى شيئًا' : 'You send 1 ETH. You receive nothing',
      )
      found.push(await shoot(page, name('transaction'), [origin]))
      await reject()
      reject = await dialog(page, frame, 'typed', typedData)
      // The permission's date reads how far off it is: that moves with the day.
      found.push(await shoot(page, name('typed-data'), [origin, frame.locator('#review-rows dd').nth(4)]))
      await reject()
      reject = await dialog(page, frame, 'grant', grant(SHOT_TIME))
      // The expiry, an hour from the held clock: its row and its line in the tree.
      found.push(await shoot(page, name('grant'), [origin, frame.locator('#review-rows dd').nth(1), frame.locator('#review-tree li li').first()]))
      await reject()

      expect(found.filter(Boolean)).toEqual([])
      expect(errors).toEqual([])
    },
  )
})
