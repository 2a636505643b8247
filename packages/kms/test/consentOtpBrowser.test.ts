import { p256 } from '@noble/curves/p256'
import type { Frame, Page } from 'playwright-core'
import { describe, expect, test } from 'vitest'
import { signBundle } from '../src/bundles.js'
import { dialogViolations } from './frameAxe.js'
import { useFrameHarness } from './frameHarness.js'

// COLLECT_OTP in Chromium: the app page speaks the consent frame's protocol by hand and relays the
// kms's target bundle; the code is typed into the frame's own field with Playwright's keyboard
// (trusted input), and the frame answers only ciphertext and its key's login signature, which the
// kms's verify_otp and otp_login accept. A bundle the kms did not sign never opens the dialog; a
// click a script makes on "Verify" submits nothing.

const appHtml = `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>App</title>
<script type="module">
window.openConsent = (framesUrl) => new Promise((resolve) => {
  const iframe = document.createElement('iframe')
  iframe.src = framesUrl + '/consent'
  iframe.style.cssText = 'width: 480px; height: 640px; border: 0'
  const channel = new MessageChannel()
  const waiting = new Map()
  channel.port1.onmessage = (event) => {
    if (event.data.type === 'PUBLIC_KEY_READY') return resolve(event.data.value)
    waiting.get(event.data.requestId)?.(event.data)
  }
  window.ask = (type, requestId, value) => { window.answer = new Promise((done) => waiting.set(requestId, done)); channel.port1.postMessage({ type, requestId, value }) }
  iframe.addEventListener('load', () => iframe.contentWindow.postMessage({ type: 'TURNKEY_INIT_MESSAGE_CHANNEL' }, new URL(framesUrl).origin, [channel.port2]), { once: true })
  document.body.append(iframe)
})
</script></head><body></body></html>`

const harness = useFrameHarness(appHtml)
let users = 0

/** A user with an email, and a code sent to it: the target bundle the app relays and the code from the inbox. */
async function codeSent() {
  const email = `frame${++users}@example.test`
  const organizationId = await harness.userWithEmail(email)
  const { activity } = await harness.backend.initOtp({
    type: 'ACTIVITY_TYPE_INIT_OTP_V3',
    timestampMs: String(Date.now()),
    organizationId,
    parameters: { otpType: 'OTP_TYPE_EMAIL', contact: email, appName: 'Latchkey Demo' },
  })
  const { otpId, otpEncryptionTargetBundle } = activity.result.initOtpResultV2!
  const code = /sign-in code is (\d{6})\./.exec(await harness.mailTo(email))![1]!
  return { email, organizationId, otpId, otpEncryptionTargetBundle, code }
}

async function openConsent(): Promise<{ page: Page; frame: Frame; publicKey: string }> {
  const page = await harness.browser.newPage()
  await page.goto(harness.appOrigin)
  const publicKey = await page.evaluate(
    (framesUrl) => (window as unknown as { openConsent(url: string): Promise<string> }).openConsent(framesUrl),
    harness.kms.framesUrl!,
  )
  return { page, frame: page.frames().find((candidate) => candidate.url() === `${harness.kms.framesUrl}/consent`)!, publicKey }
}

const ask = (page: Page, type: string, requestId: string, value: unknown) =>
  page.evaluate(({ type, requestId, value }) => (window as unknown as { ask(type: string, id: string, value: unknown): void }).ask(type, requestId, value), {
    type,
    requestId,
    value,
  })
const answer = (page: Page) => page.evaluate(() => (window as unknown as { answer: Promise<unknown> }).answer)

type Collected = {
  type: string
  requestId: string
  value: { encryptedOtpBundle: string; clientSignature: { publicKey: string; message: string }; publicKey: string }
}

describe('COLLECT_OTP', () => {
  test('default: the code typed in the frame reaches the kms sealed; the answer never holds it; the frame’s key becomes the session’s', async () => {
    const sent = await codeSent()
    const { page, frame, publicKey } = await openConsent()
    await ask(page, 'COLLECT_OTP', 'otp-1', { targetBundle: sent.otpEncryptionTargetBundle, email: sent.email, otpId: sent.otpId })
    const dialog = frame.getByRole('dialog', { name: 'Enter your sign-in code' })
    await dialog.waitFor()
    expect(await dialogViolations(page, frame, 'sign-in code')).toEqual([])
    expect(await frame.locator('#otp-email').textContent()).toBe(sent.email)
    const field = frame.getByRole('textbox', { name: 'Sign-in code' })
    expect(await field.getAttribute('autocomplete')).toBe('one-time-code')
    // Playwright's keyboard: trusted key events, as a person typing.
    await field.press(sent.code[0]!)
    await page.keyboard.type(sent.code.slice(1))
    await page.keyboard.press('Enter')
    const reply = (await answer(page)) as Collected
    await dialog.waitFor({ state: 'hidden' })
    expect(Object.keys(reply.value).sort()).toEqual(['clientSignature', 'encryptedOtpBundle', 'publicKey'])
    expect([reply.type, reply.requestId, reply.value.publicKey]).toEqual(['OTP_COLLECTED', 'otp-1', publicKey])
    expect(JSON.stringify(reply)).not.toMatch(new RegExp(`(?<![0-9a-f])${sent.code}(?![0-9a-f])`))
    expect(await frame.locator('#otp-code').inputValue()).toBe('')

    const verified = await harness.backend.verifyOtp({
      type: 'ACTIVITY_TYPE_VERIFY_OTP_V2',
      timestampMs: String(Date.now()),
      organizationId: sent.organizationId,
      parameters: { otpId: sent.otpId, encryptedOtpBundle: reply.value.encryptedOtpBundle },
    })
    const verificationToken = verified.activity.result.verifyOtpResult!.verificationToken
    const login = await harness.backend.otpLogin({
      type: 'ACTIVITY_TYPE_OTP_LOGIN_V2',
      timestampMs: String(Date.now()),
      organizationId: sent.organizationId,
      parameters: { verificationToken, publicKey, clientSignature: { ...reply.value.clientSignature, scheme: 'CLIENT_SIGNATURE_SCHEME_API_P256' } as never },
    })
    const session = login.activity.result.otpLoginResult!.session
    expect(JSON.parse(Buffer.from(session.split('.')[1]!, 'base64url').toString())).toMatchObject({
      public_key: publicKey,
      organization_id: sent.organizationId,
    })
    await page.close()
  })

  test('error: a bundle the kms did not sign, or relayed under another address, is refused (-32602) and no dialog shows', async () => {
    const sent = await codeSent()
    const { page, frame } = await openConsent()
    const forger = p256.utils.randomPrivateKey()
    const data = JSON.parse(Buffer.from(JSON.parse(sent.otpEncryptionTargetBundle).data, 'hex').toString())
    const forged = JSON.parse(
      signBundle(Buffer.from(forger).toString('hex'), { ...data, targetPublic: Buffer.from(p256.getPublicKey(forger, false)).toString('hex') }),
    )
    delete forged.enclaveQuorumPublic
    await ask(page, 'COLLECT_OTP', 'otp-2', { targetBundle: JSON.stringify(forged), email: sent.email })
    expect(await answer(page)).toEqual({
      type: 'ERROR',
      value: { code: -32602, message: 'COLLECT_OTP: the bundle signature does not verify' },
      requestId: 'otp-2',
    })
    expect(await frame.locator('#otp').isHidden()).toBe(true)
    // The genuine bundle names the kms's key, and the page's word for the otpId must match it.
    await ask(page, 'COLLECT_OTP', 'otp-3', { targetBundle: sent.otpEncryptionTargetBundle, email: sent.email, otpId: 'another-code' })
    expect(await answer(page)).toEqual({
      type: 'ERROR',
      value: { code: -32602, message: `COLLECT_OTP: the bundle is for code ${sent.otpId}, not another-code` },
      requestId: 'otp-3',
    })
    expect(await frame.locator('#otp').isHidden()).toBe(true)
    // The address the dialog names is the one the kms signed: a page cannot ask for one account's
    // code under another's name.
    await ask(page, 'COLLECT_OTP', 'otp-5', { targetBundle: sent.otpEncryptionTargetBundle, email: 'someone.else@example.test' })
    expect(await answer(page)).toEqual({
      type: 'ERROR',
      value: { code: -32602, message: 'COLLECT_OTP: the code was sent to another address than someone.else@example.test' },
      requestId: 'otp-5',
    })
    expect(await frame.locator('#otp').isHidden()).toBe(true)
    await page.close()
  })

  test('error: a click a script makes on Verify submits nothing; a short code gets an inline error; Escape answers 4001', async () => {
    const sent = await codeSent()
    const { page, frame } = await openConsent()
    await ask(page, 'COLLECT_OTP', 'otp-4', { targetBundle: sent.otpEncryptionTargetBundle, email: sent.email })
    const dialog = frame.locator('#otp')
    await dialog.waitFor()
    await frame.getByRole('textbox', { name: 'Sign-in code' }).press(sent.code[0]!)
    await page.keyboard.type(sent.code.slice(1))
    // A script in the frame's own document (the worst case: the app page cannot even reach it).
    await frame.evaluate(() => {
      document.getElementById('otp-verify')!.click()
      document.getElementById('otp-code')!.dispatchEvent(new KeyboardEvent('keydown', { key: 'Enter', bubbles: true }))
    })
    expect(await dialog.isVisible()).toBe(true)
    await frame.getByRole('textbox', { name: 'Sign-in code' }).fill('12345')
    await page.keyboard.press('Enter')
    expect(await frame.getByRole('alert').textContent()).toBe('Enter the 6-digit code from the email.')
    expect(await frame.getByRole('textbox', { name: 'Sign-in code' }).getAttribute('aria-invalid')).toBe('true')
    await page.keyboard.press('Escape')
    expect(await answer(page)).toEqual({ type: 'ERROR', value: { code: 4001, message: 'User rejected the request.' }, requestId: 'otp-4' })
    await dialog.waitFor({ state: 'hidden' })
    await page.close()
  })
})
