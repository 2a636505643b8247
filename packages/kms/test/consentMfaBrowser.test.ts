import { generateSync } from 'otplib'
import type { Frame, Page } from 'playwright-core'
import { describe, expect, test } from 'vitest'
import { dialogViolations } from './frameAxe.js'
import { useFrameHarness } from './frameHarness.js'

// ENROLL_TOTP and VERIFY_MFA in Chromium: the app page speaks the consent frame's protocol by hand
// and carries the frame's stamped bodies to the kms and the kms's answers back (here the test does
// the carrying, as the page's script would). The secret is read from the frame's dialog, as a
// person would read it into an authenticator app; codes are typed with Playwright's keyboard
// (trusted input). Nothing the page is answered holds the secret or a recovery code.

const appHtml = `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>App</title>
<script type="module">
window.openConsent = (framesUrl) => new Promise((resolve) => {
  const iframe = document.createElement('iframe')
  iframe.src = framesUrl + '/consent'
  iframe.style.cssText = 'width: 480px; height: 720px; border: 0'
  const channel = new MessageChannel()
  const waiting = new Map()
  window.seen = []
  channel.port1.onmessage = (event) => {
    window.seen.push(event.data)
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
let requests = 0

type Reply = { type: string; requestId: string; value: unknown }
type Submit = { op: string; body: string; stampHeaderName: string; stampHeaderValue: string }

/**
 * A consent frame whose signing key is the session of a new sub-organization's user, signed in
 * with an email code typed in the frame (COLLECT_OTP): the fresh credential enrolment needs.
 */
async function signedIn(): Promise<{ page: Page; frame: Frame; organizationId: string; userId: string }> {
  const page = await harness.browser.newPage()
  await page.goto(harness.appOrigin)
  const publicKey = await page.evaluate(
    (framesUrl) => (window as unknown as { openConsent(url: string): Promise<string> }).openConsent(framesUrl),
    harness.kms.framesUrl!,
  )
  const frame = page.frames().find((candidate) => candidate.url() === `${harness.kms.framesUrl}/consent`)!
  const email = `mfaframe${++users}@example.test`
  const organizationId = await harness.userWithEmail(email)
  const { users: found } = await harness.backend.getUsers({ organizationId })
  const { activity } = await harness.backend.initOtp({
    type: 'ACTIVITY_TYPE_INIT_OTP_V3',
    timestampMs: String(Date.now()),
    organizationId,
    parameters: { otpType: 'OTP_TYPE_EMAIL', contact: email, appName: 'Latchkey Demo' },
  })
  const { otpId, otpEncryptionTargetBundle } = activity.result.initOtpResultV2!
  const code = /sign-in code is (\d{6})\./.exec(await harness.mailTo(email))![1]!
  await send(page, 'COLLECT_OTP', { targetBundle: otpEncryptionTargetBundle, email, otpId })
  await typeCode(page, frame, 'Sign-in code', code)
  const collected = (await answer(page)).value as { encryptedOtpBundle: string; clientSignature: Record<string, string> }
  const verified = await harness.backend.verifyOtp({
    type: 'ACTIVITY_TYPE_VERIFY_OTP_V2',
    timestampMs: String(Date.now()),
    organizationId,
    parameters: { otpId, encryptedOtpBundle: collected.encryptedOtpBundle },
  })
  await harness.backend.otpLogin({
    type: 'ACTIVITY_TYPE_OTP_LOGIN_V2',
    timestampMs: String(Date.now()),
    organizationId,
    parameters: {
      verificationToken: verified.activity.result.verifyOtpResult!.verificationToken,
      publicKey,
      clientSignature: collected.clientSignature as never,
    },
  })
  await page.evaluate(() => {
    ;(window as unknown as { seen: unknown[] }).seen = []
  })
  return { page, frame, organizationId, userId: found[0]!.userId }
}

/** Asks the frame `type` and waits for its answer. */
async function ask(page: Page, type: string, value: unknown): Promise<Reply> {
  const requestId = `mfa-${++requests}`
  await page.evaluate(
    ({ type, requestId, value }) => (window as unknown as { ask(type: string, id: string, value: unknown): void }).ask(type, requestId, value),
    {
      type,
      requestId,
      value,
    },
  )
  return page.evaluate(() => (window as unknown as { answer: Promise<Reply> }).answer)
}

/** Sends `type` without waiting for the answer (it comes once the user acts in the dialog). */
async function send(page: Page, type: string, value: unknown): Promise<void> {
  const requestId = `mfa-${++requests}`
  await page.evaluate(
    ({ type, requestId, value }) => (window as unknown as { ask(type: string, id: string, value: unknown): void }).ask(type, requestId, value),
    {
      type,
      requestId,
      value,
    },
  )
}
const answer = (page: Page) => page.evaluate(() => (window as unknown as { answer: Promise<Reply> }).answer)

/** Carries an MFA_SUBMIT to the kms, as the page's script does: its status and JSON body. */
async function carry(reply: Reply): Promise<{ status: number; body: Record<string, unknown> }> {
  expect(reply.type).toBe('MFA_SUBMIT')
  const { op, body, stampHeaderName, stampHeaderValue } = reply.value as Submit
  const response = await fetch(`${harness.kms.url}/public/v1/submit/${op}`, { method: 'POST', body, headers: { [stampHeaderName]: stampHeaderValue } })
  return { status: response.status, body: (await response.json()) as Record<string, unknown> }
}

const codeOf = (secret: string, offsetSeconds = 0) => generateSync({ secret, epoch: Math.floor(Date.now() / 1000) + offsetSeconds })

/** Types `text` into the dialog's field and presses Enter, as a person does. */
async function typeCode(page: Page, frame: Frame, name: string, text: string) {
  const field = frame.getByRole('textbox', { name })
  await field.press(text[0]!)
  await page.keyboard.type(text.slice(1))
  await page.keyboard.press('Enter')
}

/** Runs an enrolment to its end in the frame: the factor id, the secret read off the dialog, the recovery codes it showed. */
async function enrol(user: Awaited<ReturnType<typeof signedIn>>) {
  const { page, frame } = user
  const create = await carry(await ask(page, 'ENROLL_TOTP', { organizationId: user.organizationId, userId: user.userId }))
  expect(create).toMatchObject({ status: 200 })
  await send(page, 'MFA_RESULT', create)
  await frame.getByRole('dialog', { name: 'Set up your authenticator app' }).waitFor()
  const secret = (await frame.getByRole('group', { name: 'Secret' }).locator('#mfa-secret').textContent())!.replaceAll(' ', '')
  await typeCode(page, frame, 'Authentication code', codeOf(secret))
  const verified = await carry(await answer(page))
  expect(verified.status).toBe(200)
  await send(page, 'MFA_RESULT', verified)
  await frame.getByRole('dialog', { name: 'Save your recovery codes' }).waitFor()
  const recoveryCodes = await frame.getByRole('list', { name: 'Recovery codes' }).getByRole('listitem').allTextContents()
  await frame.getByRole('button', { name: 'Done' }).click()
  const done = await answer(page)
  return { done, secret, recoveryCodes }
}

/** Every message the page was sent by the frame, as JSON. */
const seenByPage = (page: Page) => page.evaluate(() => JSON.stringify((window as unknown as { seen: unknown[] }).seen))

describe('ENROLL_TOTP', () => {
  test('default: the secret as text and QR in the frame, a wrong code refused inline, the right one enrols, recovery codes shown only in the frame', async () => {
    const user = await signedIn()
    const { page, frame } = user
    const submitted = await ask(page, 'ENROLL_TOTP', { organizationId: user.organizationId, userId: user.userId })
    const { op, body } = submitted.value as Submit
    const sent = JSON.parse(body) as { type: string; organizationId: string; parameters: { userId: string; targetPublicKey: string } }
    expect([op, sent.type, sent.organizationId, sent.parameters.userId]).toEqual([
      'create_totp_factor',
      'ACTIVITY_TYPE_LATCHKEY_CREATE_TOTP_FACTOR',
      user.organizationId,
      user.userId,
    ])
    expect(sent.parameters.targetPublicKey).toMatch(/^04[0-9a-f]{128}$/)
    const create = await carry(submitted)
    expect(create.status).toBe(200)
    const created = (create.body['activity'] as { result: { createTotpFactorResult: Record<string, string> } }).result.createTotpFactorResult
    expect(Object.keys(created).sort()).toEqual(['factorId', 'secretBundle'])

    await send(page, 'MFA_RESULT', create)
    const dialog = frame.getByRole('dialog', { name: 'Set up your authenticator app' })
    await dialog.waitFor()
    expect(await dialogViolations(page, frame, 'MFA enrolment')).toEqual([])
    const group = frame.getByRole('group', { name: 'Secret' })
    const secret = (await group.locator('#mfa-secret').textContent())!.replaceAll(' ', '')
    expect(secret).toMatch(/^[A-Z2-7]{32}$/)
    const qr = frame.getByRole('img', { name: 'QR code to add this account to your authenticator app' })
    expect(await qr.isVisible()).toBe(true)
    expect(await qr.evaluate((svg) => svg.tagName)).toBe('svg')
    expect(await frame.getByRole('textbox', { name: 'Authentication code' }).getAttribute('autocomplete')).toBe('one-time-code')

    // A wrong code (an hour old): the kms refuses it, the dialog says so, the user tries again.
    await typeCode(page, frame, 'Authentication code', codeOf(secret, -3600))
    const wrong = await carry(await answer(page))
    expect(wrong.status).toBe(400)
    await send(page, 'MFA_RESULT', wrong)
    await expect.poll(() => frame.getByRole('alert').textContent()).toBe('Invalid code: 4 attempts left before the factor locks for 15 minutes')
    expect(await frame.getByRole('textbox', { name: 'Authentication code' }).getAttribute('aria-invalid')).toBe('true')

    await typeCode(page, frame, 'Authentication code', codeOf(secret))
    const verified = await carry(await answer(page))
    expect(verified.status).toBe(200)
    const result = (verified.body['activity'] as { result: { verifyMfaFactorResult: Record<string, unknown> } }).result.verifyMfaFactorResult
    expect(Object.keys(result).sort()).toEqual(['enrolled', 'factorId', 'mfaVerifiedAt', 'recoveryCodesBundle'])
    await send(page, 'MFA_RESULT', verified)
    await frame.getByRole('dialog', { name: 'Save your recovery codes' }).waitFor()
    expect(await dialogViolations(page, frame, 'MFA recovery codes')).toEqual([])
    expect(await frame.locator('#mfa-intro').textContent()).toMatch(/^Save these codes somewhere safe\./)
    const recoveryCodes = await frame.getByRole('list', { name: 'Recovery codes' }).getByRole('listitem').allTextContents()
    expect(recoveryCodes).toHaveLength(10)
    for (const code of recoveryCodes) expect(code).toMatch(/^[a-z2-7]{4}-[a-z2-7]{4}-[a-z2-7]{4}$/)
    await frame.getByRole('button', { name: 'Done' }).click()
    const done = await answer(page)
    expect(done).toEqual({ type: 'TOTP_ENROLLED', value: { factorId: created['factorId'] }, requestId: done.requestId })
    await dialog.waitFor({ state: 'hidden' })

    // The page was told ids, stamped bodies and ciphertext: never the secret or a recovery code.
    const seen = await seenByPage(page)
    for (const text of [secret, ...recoveryCodes]) expect(seen).not.toContain(text)
    expect(seen.toLowerCase()).not.toContain(secret.toLowerCase())
    await page.close()
  })

  test('error: Escape answers 4001; a click a script makes on Verify submits nothing; a short code gets an inline error', async () => {
    const user = await signedIn()
    const { page, frame } = user
    const create = await carry(await ask(page, 'ENROLL_TOTP', { organizationId: user.organizationId, userId: user.userId }))
    await send(page, 'MFA_RESULT', create)
    const dialog = frame.getByRole('dialog', { name: 'Set up your authenticator app' })
    await dialog.waitFor()
    await frame.getByRole('textbox', { name: 'Authentication code' }).fill('123456')
    await frame.evaluate(() => document.getElementById('mfa-verify')!.click())
    await frame.getByRole('textbox', { name: 'Authentication code' }).fill('12345')
    await page.keyboard.press('Enter')
    expect(await frame.getByRole('alert').textContent()).toBe('Enter the 6-digit code from your authenticator app.')
    await page.keyboard.press('Escape')
    const rejected = await answer(page)
    expect(rejected).toEqual({ type: 'ERROR', value: { code: 4001, message: 'User rejected the request.' }, requestId: rejected.requestId })
    await dialog.waitFor({ state: 'hidden' })
    // Nothing was submitted for the script's click: the one answer after MFA_RESULT is the rejection.
    const seen = JSON.parse(await seenByPage(page)) as Reply[]
    expect(seen.map((message) => message.type)).toEqual(['MFA_SUBMIT', 'ERROR'])
    // MFA_RESULT with no request it answers.
    expect(await ask(page, 'MFA_RESULT', create)).toMatchObject({
      type: 'ERROR',
      value: { code: -32602, message: 'MFA_RESULT answers no second-factor request: send ENROLL_TOTP or VERIFY_MFA first' },
    })
    await page.close()
  })
})

describe('VERIFY_MFA', () => {
  test('default: a code from the authenticator app typed in the frame verifies the session', async () => {
    const user = await signedIn()
    const { page, frame } = user
    const { done, secret } = await enrol(user)
    const factorId = (done.value as { factorId: string }).factorId
    await send(page, 'VERIFY_MFA', { organizationId: user.organizationId, factorId })
    await frame.getByRole('dialog', { name: 'Confirm it is you' }).waitFor()
    expect(await dialogViolations(page, frame, 'MFA verification')).toEqual([])
    // The step after the one enrolment spent (each step is accepted once).
    await typeCode(page, frame, 'Authentication code', codeOf(secret, 30))
    const submitted = await answer(page)
    const sent = JSON.parse((submitted.value as Submit).body) as { type: string; parameters: Record<string, string> }
    expect([sent.type, sent.parameters['factorId'], Object.keys(sent.parameters).sort()]).toEqual([
      'ACTIVITY_TYPE_LATCHKEY_VERIFY_MFA_FACTOR',
      factorId,
      ['encryptedCodeBundle', 'factorId', 'targetPublicKey'],
    ])
    // The body the page relays holds the code sealed to the kms: none of its digits in a row.
    expect(JSON.parse(sent.parameters['encryptedCodeBundle']!)).toEqual({ encappedPublic: expect.any(String), ciphertext: expect.any(String) })
    expect((submitted.value as Submit).body).not.toContain(codeOf(secret, 30))
    expect(await seenByPage(page)).not.toContain(codeOf(secret, 30))
    const verified = await carry(submitted)
    expect(verified.status).toBe(200)
    const reply = await ask(page, 'MFA_RESULT', verified)
    expect(reply).toEqual({ type: 'MFA_VERIFIED', value: { verified: true }, requestId: reply.requestId })
    expect(await frame.locator('#mfa').isHidden()).toBe(true)
    await page.close()
  })

  test('behavior: a recovery code typed instead verifies the session; the same code again is refused inline', async () => {
    const user = await signedIn()
    const { page, frame } = user
    const { done, recoveryCodes } = await enrol(user)
    const factorId = (done.value as { factorId: string }).factorId
    await send(page, 'VERIFY_MFA', { organizationId: user.organizationId, factorId })
    await frame.getByRole('dialog', { name: 'Confirm it is you' }).waitFor()
    await frame.getByRole('button', { name: 'Use a recovery code' }).click()
    await typeCode(page, frame, 'Recovery code', recoveryCodes[0]!)
    const submitted = await answer(page)
    // The recovery code, which unlocks every factor, is sealed to the kms as a code is.
    expect(Object.keys(JSON.parse((submitted.value as Submit).body).parameters).sort()).toEqual(['encryptedCodeBundle', 'targetPublicKey'])
    for (const text of [recoveryCodes[0]!, recoveryCodes[0]!.replaceAll('-', '')]) expect((submitted.value as Submit).body).not.toContain(text)
    const verified = await carry(submitted)
    expect(verified.status).toBe(200)
    expect(await ask(page, 'MFA_RESULT', verified)).toMatchObject({ type: 'MFA_VERIFIED', value: { verified: true } })

    await send(page, 'VERIFY_MFA', { organizationId: user.organizationId, factorId })
    await frame.getByRole('dialog', { name: 'Confirm it is you' }).waitFor()
    await frame.getByRole('button', { name: 'Use a recovery code' }).click()
    await typeCode(page, frame, 'Recovery code', recoveryCodes[0]!)
    const again = await carry(await answer(page))
    expect(again.status).toBe(403)
    await send(page, 'MFA_RESULT', again)
    await expect.poll(() => frame.getByRole('alert').textContent()).toBe('Recovery code refused: it is not one of yours, or it was used already')
    await page.keyboard.press('Escape')
    expect(await answer(page)).toMatchObject({ type: 'ERROR', value: { code: 4001, message: 'User rejected the request.' } })
    await page.close()
  })

  test('error: five wrong codes lock the factor and the dialog says so; a recovery code then verifies', async () => {
    const user = await signedIn()
    const { page, frame } = user
    const { done, secret, recoveryCodes } = await enrol(user)
    const factorId = (done.value as { factorId: string }).factorId
    await send(page, 'VERIFY_MFA', { organizationId: user.organizationId, factorId })
    await frame.getByRole('dialog', { name: 'Confirm it is you' }).waitFor()
    const alerts: string[] = []
    for (let attempt = 1; attempt <= 6; attempt++) {
      // Codes an hour old: wrong, and each different.
      await typeCode(page, frame, 'Authentication code', codeOf(secret, -3600 - 30 * attempt))
      const refused = await carry(await answer(page))
      await send(page, 'MFA_RESULT', refused)
      await expect.poll(() => frame.getByRole('textbox', { name: 'Authentication code' }).isEnabled()).toBe(true)
      alerts.push((await frame.getByRole('alert').textContent())!)
    }
    expect(alerts.slice(0, 4)).toEqual(
      [4, 3, 2, 1].map((left) => `Invalid code: ${left} attempt${left === 1 ? '' : 's'} left before the factor locks for 15 minutes`),
    )
    expect(alerts[4]).toMatch(/^Invalid code: the factor is locked until \d{4}-\d\d-\d\dT[\d:.]+Z$/)
    expect(alerts[5]).toMatch(/^Second factor locked after 5 wrong codes until \d{4}-\d\d-\d\dT[\d:.]+Z: a recovery code unlocks it sooner$/)
    // Locked: the right code too is refused; a recovery code unlocks it.
    await typeCode(page, frame, 'Authentication code', codeOf(secret, 30))
    const locked = await carry(await answer(page))
    expect(locked.status).toBe(429)
    await send(page, 'MFA_RESULT', locked)
    await expect.poll(() => frame.getByRole('alert').textContent()).toMatch(/^Second factor locked after 5 wrong codes/)
    await frame.getByRole('button', { name: 'Use a recovery code' }).click()
    await typeCode(page, frame, 'Recovery code', recoveryCodes[3]!)
    const verified = await carry(await answer(page))
    expect(verified.status).toBe(200)
    expect(await ask(page, 'MFA_RESULT', verified)).toMatchObject({ type: 'MFA_VERIFIED', value: { verified: true } })
    await page.close()
  })

  test('error: a secret bundle the kms did not sign is refused (-32602) and the dialog closes', async () => {
    const user = await signedIn()
    const { page, frame } = user
    const create = await carry(await ask(page, 'ENROLL_TOTP', { organizationId: user.organizationId, userId: user.userId }))
    const result = (create.body['activity'] as { result: { createTotpFactorResult: { secretBundle: string } } }).result.createTotpFactorResult
    const bundle = JSON.parse(result.secretBundle) as { enclaveQuorumPublic: string; dataSignature: string; data: string }
    // The signature of another body: a page that alters the bundle.
    result.secretBundle = JSON.stringify({ ...bundle, dataSignature: `${bundle.dataSignature.slice(0, -4)}0000` })
    const reply = await ask(page, 'MFA_RESULT', create)
    expect(reply).toEqual({
      type: 'ERROR',
      value: { code: -32602, message: 'MFA_RESULT: the bundle signature does not verify' },
      requestId: reply.requestId,
    })
    expect(await frame.locator('#mfa').isHidden()).toBe(true)
    await page.close()
  })
})
