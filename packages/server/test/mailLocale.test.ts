import { describe, expect, test } from 'vitest'
import { newEmail, useBackend } from './backend.js'

// The kms's mails follow the user's language: the app's `locale` in the body, else the browser's
// Accept-Language, passed to the kms (its Latchkey extension field); English otherwise.

const { post, mailTo } = useBackend()

describe('the language of the mails the backend asks for', () => {
  test("default: a sign-in code in the browser's language (Accept-Language)", async () => {
    const email = newEmail()
    expect((await post('/auth/email/start', { email }, { 'accept-language': 'de-DE,de;q=0.9,en;q=0.5' })).status).toBe(200)
    const [mail] = await mailTo(email)
    expect(mail!.subject).toBe('Ihr Anmeldecode für Latchkey Demo')
    expect(mail!.text).toMatch(/^Ihr Anmeldecode für Latchkey Demo lautet \d{6}\. Er läuft in 5 Minuten ab\./)
  })

  test("behavior: the body's locale (the app's UI language) wins over Accept-Language", async () => {
    const email = newEmail()
    expect((await post('/auth/email/start', { email, locale: 'ar' }, { 'accept-language': 'de' })).status).toBe(200)
    const [mail] = await mailTo(email)
    expect(mail!.subject).toBe('رمز تسجيل الدخول إلى Latchkey Demo')
    expect(mail!.text).toMatch(/^رمز تسجيل الدخول إلى Latchkey Demo هو \d{6}\./)
  })

  test('behavior: a passkey sign-up proves its email in the asked language too', async () => {
    const email = newEmail()
    expect((await post('/auth/passkey/signup/start', { email, locale: 'ja' })).status).toBe(200)
    const [mail] = await mailTo(email)
    expect(mail!.subject).toBe('Latchkey Demo のサインインコード')
  })

  test('behavior: a language the kms does not write in is English', async () => {
    const email = newEmail()
    expect((await post('/auth/email/start', { email }, { 'accept-language': 'nl-NL, sv;q=0.8' })).status).toBe(200)
    const [mail] = await mailTo(email)
    expect(mail!.subject).toBe('Your Latchkey Demo sign-in code')
  })

  test('error: a locale that is not a string is refused (400) and nothing is sent', async () => {
    const email = newEmail()
    const response = await post('/auth/email/start', { email, locale: 42 })
    expect(response.status).toBe(400)
    expect(await mailTo(email)).toEqual([])
  })
})
