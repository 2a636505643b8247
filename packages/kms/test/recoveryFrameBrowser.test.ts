import { p256 } from '@noble/curves/p256'
import type { Frame, Page } from 'playwright-core'
import { describe, expect, test } from 'vitest'
import { useFrameHarness } from './frameHarness.js'

// The recovery frame in Chromium (security review H1): the app page speaks the frame protocol by
// hand, as a script in it could. The code a recovery email carries is typed into the frame's own
// box; a bundle the page sends is refused, and the credential, once open, stamps only what a
// recovery needs: reads, the sign-in of this browser's consent-frame key, a new passkey.

const appHtml = `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>App</title>
<script type="module">
window.frames_ = {}
window.openFrame = (framesUrl, page) => new Promise((resolve) => {
  const iframe = document.createElement('iframe')
  iframe.src = framesUrl + '/' + page
  iframe.title = page
  iframe.style.cssText = 'width: 480px; height: 240px; border: 0'
  const channel = new MessageChannel()
  const waiting = new Map()
  channel.port1.onmessage = (event) => {
    if (event.data.type === 'PUBLIC_KEY_READY') return resolve(event.data.value)
    waiting.get(event.data.requestId)?.(event.data)
  }
  window.frames_[page] = (type, requestId, value) => new Promise((done) => { waiting.set(requestId, done); channel.port1.postMessage({ type, requestId, value }) })
  iframe.addEventListener('load', () => iframe.contentWindow.postMessage({ type: 'TURNKEY_INIT_MESSAGE_CHANNEL' }, new URL(framesUrl).origin, [channel.port2]), { once: true })
  document.body.append(iframe)
})
</script></head><body></body></html>`

const harness = useFrameHarness(appHtml)
let users = 0

type Answer = { type: string; value: unknown; requestId: string }

/** The app page with the consent frame (its signing key made) and the recovery frame open. */
async function openFrames(): Promise<{ page: Page; recovery: Frame; consentKey: string; recoveryKey: string }> {
  const page = await harness.browser.newPage()
  await page.goto(harness.appOrigin)
  const open = (name: string) =>
    page.evaluate(({ url, name }) => (window as unknown as { openFrame(url: string, page: string): Promise<string> }).openFrame(url, name), {
      url: harness.kms.framesUrl!,
      name,
    })
  const consentKey = await open('consent')
  const recoveryKey = await open('recovery')
  return { page, recovery: page.frames().find((frame) => frame.url() === `${harness.kms.framesUrl}/recovery`)!, consentKey, recoveryKey }
}

const ask = (page: Page, type: string, requestId: string, value?: unknown) =>
  page.evaluate(
    ({ type, requestId, value }) =>
      (window as unknown as { frames_: Record<string, (type: string, id: string, value: unknown) => Promise<unknown>> }).frames_['recovery']!(
        type,
        requestId,
        value,
      ),
    { type, requestId, value },
  ) as Promise<Answer>

/** A user with an email, and a recovery email (email_auth) encrypted to `targetPublicKey`: the code in it. */
async function recoveryCodeSent(targetPublicKey: string) {
  const email = `recover${++users}@example.test`
  const organizationId = await harness.userWithEmail(email)
  await harness.backend.emailAuth({
    type: 'ACTIVITY_TYPE_EMAIL_AUTH_V3',
    timestampMs: String(Date.now()),
    organizationId,
    parameters: { email, targetPublicKey, expirationSeconds: '900', emailCustomization: { appName: 'Latchkey Demo' } },
  })
  const code = /\n\n(\S+)\n\n/.exec(await harness.mailTo(email))![1]!
  return { email, organizationId, code }
}

/** Sends `body` to the kms with the frame's stamp. */
const send = (path: string, body: string, stamp: string) =>
  fetch(`${harness.kms.url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json', 'X-Stamp': stamp }, body })

describe('recovery frame', () => {
  test('default: the code typed into the frame opens there; its credential signs in the consent frame’s key', async () => {
    const { page, recovery, consentKey, recoveryKey } = await openFrames()
    const sent = await recoveryCodeSent(recoveryKey)
    const box = recovery.getByRole('textbox', { name: 'Recovery code' })
    await box.fill(sent.code)
    expect(await ask(page, 'OPEN_TYPED_CREDENTIAL', 'open-1')).toEqual({ type: 'BUNDLE_INJECTED', value: true, requestId: 'open-1' })
    expect(await box.inputValue()).toBe('')

    // A read: the credential names its user.
    const whoami = JSON.stringify({ organizationId: harness.parentOrganizationId })
    const read = await ask(page, 'STAMP_REQUEST', 'read-1', whoami)
    expect(read.type).toBe('STAMP')
    const user = (await (await send('/public/v1/query/whoami', whoami, read.value as string)).json()) as { organizationId: string }
    expect(user.organizationId).toBe(sent.organizationId)

    // The sign-in of the consent frame's key.
    const login = JSON.stringify({
      type: 'ACTIVITY_TYPE_STAMP_LOGIN',
      timestampMs: String(Date.now()),
      organizationId: sent.organizationId,
      parameters: { publicKey: consentKey, expirationSeconds: '1800' },
    })
    const stamped = await ask(page, 'STAMP_REQUEST', 'login-1', login)
    expect(stamped.type).toBe('STAMP')
    const answer = (await (await send('/public/v1/submit/stamp_login', login, stamped.value as string)).json()) as { activity: { status: string } }
    expect(answer.activity.status).toBe('ACTIVITY_STATUS_COMPLETED')
    await page.close()
  })

  test('error: a code the page sends, not the user, is refused; so is a typed code that does not open', async () => {
    const { page, recovery, recoveryKey } = await openFrames()
    const sent = await recoveryCodeSent(recoveryKey)
    for (const type of ['INJECT_CREDENTIAL_BUNDLE', 'INJECT_RECOVERY_BUNDLE'])
      expect(await ask(page, type, type, sent.code)).toEqual({ type: 'ERROR', value: 'the recovery frame opens only the code typed into it', requestId: type })
    expect(await ask(page, 'STAMP_REQUEST', 'stamp-0', JSON.stringify({ organizationId: sent.organizationId }))).toEqual({
      type: 'ERROR',
      value: 'there is no credential to stamp with: the user has not entered a code',
      requestId: 'stamp-0',
    })
    await recovery.getByRole('textbox', { name: 'Recovery code' }).fill('not-a-recovery-code')
    expect(await ask(page, 'OPEN_TYPED_CREDENTIAL', 'open-2')).toEqual({ type: 'ERROR', value: 'the code is invalid or expired', requestId: 'open-2' })
    expect(await recovery.getByRole('alert').textContent()).toBe('The code is invalid or expired.')
    expect(await recovery.getByRole('textbox', { name: 'Recovery code' }).getAttribute('aria-invalid')).toBe('true')
    await page.close()
  })

  test('error: the open credential stamps no export, no key of the page’s choosing, no new credential', async () => {
    const { page, recovery, recoveryKey } = await openFrames()
    const sent = await recoveryCodeSent(recoveryKey)
    await recovery.getByRole('textbox', { name: 'Recovery code' }).fill(sent.code)
    expect((await ask(page, 'OPEN_TYPED_CREDENTIAL', 'open-3')).type).toBe('BUNDLE_INJECTED')
    const activity = (type: string, parameters: unknown) =>
      JSON.stringify({ type, timestampMs: String(Date.now()), organizationId: sent.organizationId, parameters })
    const pageKey = Buffer.from(p256.getPublicKey(p256.utils.randomPrivateKey(), true)).toString('hex')
    const refusals = [
      [
        activity('ACTIVITY_TYPE_EXPORT_WALLET', { walletId: 'w', targetPublicKey: pageKey }),
        'the recovery credential does not sign ACTIVITY_TYPE_EXPORT_WALLET',
      ],
      [
        activity('ACTIVITY_TYPE_CREATE_API_KEYS_V2', { userId: 'u', apiKeys: [{ apiKeyName: 'mine', publicKey: pageKey, curveType: 'API_KEY_CURVE_P256' }] }),
        'the recovery credential does not sign ACTIVITY_TYPE_CREATE_API_KEYS_V2',
      ],
      [
        activity('ACTIVITY_TYPE_STAMP_LOGIN', { publicKey: pageKey, expirationSeconds: '1800' }),
        "the recovery credential signs in only the wallet key of this browser's consent frame",
      ],
      ['not json', 'the recovery credential stamps only JSON requests'],
    ] as const
    for (const [index, [body, message]] of refusals.entries())
      expect(await ask(page, 'STAMP_REQUEST', `refused-${index}`, body)).toEqual({ type: 'ERROR', value: message, requestId: `refused-${index}` })
    await page.close()
  })
})
