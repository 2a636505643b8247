import { ApiKeyStamper } from '@turnkey/api-key-stamper'
import { TurnkeyClient } from '@turnkey/http'
import { describe, expect, test } from 'vitest'
import { LIMITS } from '../src/index.js'
import { answer, generateApiKeyPair, newEmail, useBackend } from './backend.js'

// Guessing codes (security review M2, the backend's half): /auth/email/verify is limited per IP,
// per code and per email per day, in the store, so every instance counts the same requests; a
// refused guess never reaches the kms.

const { t, post, mailTo, frameAnswer } = useBackend()

/** A code sent to `email`: its otpId and target bundle, and the code itself. */
async function codeFor(email: string, ip = '127.0.0.1') {
  const start = await post('/auth/email/start', { email }, { 'x-test-ip': ip })
  expect(start.status).toBe(200)
  const sent = (await start.json()) as { otpId: string; otpEncryptionTargetBundle: string }
  const code = /sign-in code is (\d{6})\./.exec((await mailTo(email))[0]!.text)![1]!
  return { ...sent, code }
}

/** A well-formed answer for a code that was never sent (it never reaches the kms). */
const unknownCode = (otpId: string) => ({
  otpId,
  encryptedOtpBundle: '{}',
  clientSignature: { publicKey: generateApiKeyPair().apiPublicKey, scheme: 'CLIENT_SIGNATURE_SCHEME_API_P256', message: '{}', signature: '0'.repeat(128) },
})

/** A wrong guess for `code` (another six digits). */
const wrong = (code: string) => String((Number(code) + 1) % 1_000_000).padStart(6, '0')

/** The error codes of `responses`, counted. */
async function errorCodes(responses: Response[]) {
  const counts: Record<string, number> = {}
  for (const response of responses) {
    const body = (await response.json()) as { error?: { code: string } }
    const key = `${response.status} ${body.error?.code ?? 'ok'}`
    counts[key] = (counts[key] ?? 0) + 1
  }
  return counts
}

describe('POST /auth/email/verify limits', () => {
  test(`error: a code is tried at most ${LIMITS.verifiesPerCode} times, however many guesses race; the rest never reach the kms`, async () => {
    const sent = await codeFor(newEmail())
    const answers = await Promise.all(Array.from({ length: 12 }, () => frameAnswer(sent, wrong(sent.code))))
    const guesses = await Promise.all(answers.map((body, i) => post('/auth/email/verify', body, { 'x-test-ip': `10.1.0.${i}` })))
    expect(await errorCodes(guesses)).toEqual({ [`400 invalid_code`]: LIMITS.verifiesPerCode, '429 rate_limited': 12 - LIMITS.verifiesPerCode })
    // The right code, too, once the tries are spent.
    const right = await post('/auth/email/verify', await frameAnswer(sent, sent.code))
    expect(await answer(right)).toEqual([429, { error: { code: 'rate_limited', message: 'Too many tries of this code; ask for a new one' } }])
    expect(Number(right.headers.get('retry-after'))).toBeGreaterThan(0)
    expect(right.headers.get('set-cookie')).toBe(null)
  })

  test(`error: more than ${LIMITS.verifiesPerIp} tries from one address in ten minutes, whatever the codes`, async () => {
    const ip = '10.2.0.1'
    for (let i = 0; i < LIMITS.verifiesPerIp; i++) expect((await post('/auth/email/verify', unknownCode(`unknown-${i}`), { 'x-test-ip': ip })).status).toBe(400)
    expect(await answer(await post('/auth/email/verify', unknownCode('unknown'), { 'x-test-ip': ip }))).toEqual([
      429,
      { error: { code: 'rate_limited', message: 'Too many sign-in attempts from this network; try again in 10 minutes' } },
    ])
    // Another address is not held up.
    expect((await post('/auth/email/verify', unknownCode('unknown'), { 'x-test-ip': '10.2.0.2' })).status).toBe(400)
  })

  test(`error: more than ${LIMITS.verifiesPerEmailPerDay} tries per email in a day, over many codes and ten-minute windows`, async () => {
    const email = newEmail()
    const started = t.clock
    let jumped = 0
    let tries = 0
    let ip = 0
    try {
      while (tries < LIMITS.verifiesPerEmailPerDay) {
        // New codes past the per-email code limit: the next ten minutes.
        if (ip % LIMITS.perEmail === LIMITS.perEmail - 1) {
          t.clock += LIMITS.windowMs
          jumped += LIMITS.windowMs
        }
        const sent = await codeFor(email, `10.3.0.${++ip}`)
        for (let i = 0; i < LIMITS.verifiesPerCode && tries < LIMITS.verifiesPerEmailPerDay; i++, tries++)
          expect((await post('/auth/email/verify', await frameAnswer(sent, wrong(sent.code)), { 'x-test-ip': `10.3.0.${ip}` })).status).toBe(400)
      }
      t.clock += LIMITS.windowMs
      jumped += LIMITS.windowMs
      const sent = await codeFor(email, '10.3.1.1')
      const refused = await post('/auth/email/verify', await frameAnswer(sent, sent.code), { 'x-test-ip': '10.3.1.1' })
      expect(refused.status).toBe(429)
      expect(((await refused.json()) as { error: { message: string } }).error.message).toMatch(
        /^Too many sign-in attempts for this email today; try again in \d+ minutes$/,
      )
      // A day after the first try (a minute past it), the email may try again.
      jumped += started + LIMITS.dayMs + 60_000 - t.clock
      t.clock = started + LIMITS.dayMs + 60_000
      const next = await codeFor(email, '10.3.1.2')
      expect((await post('/auth/email/verify', await frameAnswer(next, next.code), { 'x-test-ip': '10.3.1.2' })).status).toBe(200)
    } finally {
      t.clock -= jumped
    }
  })
})

describe('POST /auth/email/verify sealed codes', () => {
  test('error: a code sealed to another code’s target does not open; the kms counts no try and the right answer still signs in', async () => {
    const sent = await codeFor(newEmail())
    const other = await codeFor(newEmail())
    // The page relays ciphertext only: swapping in another target sends the kms a bundle it cannot open.
    const misdirected = { ...(await frameAnswer(other, sent.code)), otpId: sent.otpId }
    const refused = await post('/auth/email/verify', misdirected)
    expect(await answer(refused)).toEqual([400, { error: { code: 'invalid_code', message: 'encryptedOtpBundle does not open with this code’s target key' } }])
    expect(refused.headers.get('set-cookie')).toBe(null)
    expect((await post('/auth/email/verify', await frameAnswer(sent, sent.code))).status).toBe(200)
  })

  test('behavior: 40 concurrent verifies of one code sign in once; one key is registered', async () => {
    const sent = await codeFor(newEmail())
    const key = generateApiKeyPair()
    const body = await frameAnswer(sent, sent.code, key)
    const responses = await Promise.all(Array.from({ length: 40 }, (_, i) => post('/auth/email/verify', body, { 'x-test-ip': `10.4.0.${i}` })))
    const signedIn = responses.filter((response) => response.status === 200)
    expect(signedIn.length).toBe(1)
    expect(responses.filter((response) => response.headers.get('set-cookie') !== null).length).toBe(1)
    const refusals = await errorCodes(responses.filter((response) => response.status !== 200))
    // A request that looks the code up after the winner spent it is refused before the count
    // (unknown_code); how many do depends on timing. Of those counted, exactly verifiesPerCode pass
    // to the kms: the winner, and the others the kms refuses (invalid_code).
    const late = refusals['400 unknown_code'] ?? 0
    expect(refusals['400 invalid_code']).toBe(LIMITS.verifiesPerCode - 1)
    expect(refusals['429 rate_limited']).toBe(40 - LIMITS.verifiesPerCode - late)
    expect(Object.keys(refusals).sort()).toEqual(['400 invalid_code', '429 rate_limited', ...(late ? ['400 unknown_code'] : [])].sort())
    const { organizationId } = (await signedIn[0]!.json()) as { organizationId: string }
    const user = new TurnkeyClient({ baseUrl: t.kms.url }, new ApiKeyStamper(key))
    const { apiKeys } = await user.getApiKeys({ organizationId })
    expect(apiKeys.filter((each) => each.credential.publicKey === key.apiPublicKey).length).toBe(1)
  })
})
