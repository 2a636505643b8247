import { describe, expect, test } from 'vitest'
import { codeMail, MAIL_LOCALES, mailLocale, recoveryMail, signInMail } from '../src/mails.js'

const origins = ['https://app.example']

describe('mails', () => {
  test('default: the English code mail reads as it always did', () => {
    expect(codeMail({ to: 'ada@example.test', appName: 'Demo', code: '123456', minutes: 5, origins, locale: 'en' })).toEqual({
      to: 'ada@example.test',
      subject: 'Your Demo sign-in code',
      text: 'Your Demo sign-in code is 123456. It expires in 5 minutes.\n\nOnly enter it on https://app.example. No one will ask you for it by phone, chat or email.',
      html: '<div lang="en" dir="ltr"><p>Your Demo sign-in code is <strong>123456</strong>. It expires in 5 minutes.</p><p>Only enter it on <strong>https://app.example</strong>. No one will ask you for it by phone, chat or email.</p></div>',
    })
  })

  test('behavior: French and Arabic mails are written in their language, Arabic right to left', () => {
    const french = codeMail({
      to: 'a@example.test',
      appName: 'Demo',
      code: '654321',
      minutes: 5,
      origins: ['https://a.example', 'https://b.example'],
      locale: 'fr',
    })
    expect(french.subject).toBe('Votre code de connexion à Demo')
    expect(french.text).toBe(
      'Votre code de connexion à Demo est 654321. Il expire dans 5 minutes.\n\nSaisissez-le uniquement sur https://a.example ou https://b.example. Personne ne vous le demandera par téléphone, chat ou e-mail.',
    )
    const arabic = recoveryMail({ to: 'a@example.test', appName: 'Demo', credential: 'BUNDLE', minutes: 15, origins, locale: 'ar' })
    expect(arabic.subject).toBe('استعادة حسابك في Demo')
    expect(arabic.html.startsWith('<div lang="ar" dir="rtl">')).toBe(true)
    expect(arabic.text.split('\n\n')[1]).toBe('BUNDLE')
  })

  test('behavior: every locale says the code, the app, the minutes and where to type it', () => {
    for (const locale of MAIL_LOCALES) {
      const mail = codeMail({ to: 'a@example.test', appName: 'App·Name', code: '918273', minutes: 7, origins: ['https://only.example'], locale })
      expect.soft(mail.subject, locale).toContain('App·Name')
      expect.soft(mail.subject, locale).not.toContain('918273')
      for (const part of ['918273', 'App·Name', '7', 'https://only.example']) expect.soft(mail.text, `${locale}: ${part}`).toContain(part)
      expect.soft(mail.text, locale).not.toMatch(/\{\w+\}/)
      const recovery = recoveryMail({ to: 'a@example.test', appName: 'App·Name', credential: 'BUNDLE', minutes: 9, origins: ['https://only.example'], locale })
      for (const part of ['BUNDLE', 'App·Name', '9', 'https://only.example']) expect.soft(recovery.text, `${locale} recovery: ${part}`).toContain(part)
      expect.soft(recovery.text, locale).not.toMatch(/\{\w+\}/)
      const signIn = signInMail({
        to: 'a@example.test',
        appName: 'App·Name',
        credential: 'BUNDLE',
        link: undefined,
        minutes: 11,
        origins: ['https://only.example'],
        locale,
      })
      for (const part of ['BUNDLE', 'App·Name', '11', 'https://only.example']) expect.soft(signIn.text, `${locale} sign-in: ${part}`).toContain(part)
      expect.soft(signIn.subject, locale).toContain('App·Name')
      expect.soft(signIn.text, locale).not.toMatch(/\{\w+\}/)
    }
  })

  test('behavior: the locale is a BCP 47 tag or an Accept-Language list, read by preference; anything else is English', () => {
    expect(mailLocale('pt-BR')).toBe('pt')
    expect(mailLocale('zh-Hant-TW')).toBe('zh')
    expect(mailLocale('fr-CH, fr;q=0.9, en;q=0.8')).toBe('fr')
    expect(mailLocale('nl, de;q=0.7, en;q=0.9')).toBe('en')
    expect(mailLocale('nl, de;q=0.7')).toBe('de')
    expect(mailLocale('es;q=0, it')).toBe('it')
    expect(mailLocale('xx')).toBe('en')
    expect(mailLocale('')).toBe('en')
    expect(mailLocale(undefined)).toBe('en')
  })

  test('behavior: a sign-in link is a link in the HTML part and the line itself in the text part', () => {
    const mail = signInMail({
      to: 'a@example.test',
      appName: 'Demo',
      credential: 'B',
      link: 'https://app.example/in?b="x"',
      minutes: 15,
      origins,
      locale: 'de',
    })
    expect(mail.subject).toBe('Bei Demo anmelden')
    expect(mail.text.split('\n\n')[1]).toBe('https://app.example/in?b="x"')
    expect(mail.html).toContain('<a href="https://app.example/in?b=&#34;x&#34;">Anmelden</a>')
  })

  test('error: markup in the app name is text in the HTML part, never markup', () => {
    const mail = codeMail({ to: 'a@example.test', appName: '<img src=x onerror=alert(1)>', code: '123456', minutes: 5, origins, locale: 'en' })
    expect(mail.html).not.toContain('<img')
    expect(mail.html).toContain('&#60;img src=x onerror=alert(1)&#62;')
    expect(mail.text).toContain('<img src=x onerror=alert(1)>')
  })
})
