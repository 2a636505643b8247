import { describe, expect, test } from 'vitest'
import { dialog } from '../src/frames/browser/i18n/dialog.js'
import { en } from '../src/frames/browser/i18n/en.js'
import { display, displayRow, FRAME_LOCALES, frameLocale, resolveFrameLocale, t, useFrameLocale } from '../src/frames/browser/i18n/index.js'
import { values } from '../src/frames/browser/i18n/valueTexts.js'
import { formatDate, formatNative } from '../src/frames/browser/review/format.js'
import { formatTokenAmount } from '../src/frames/browser/review/tokens.js'
import {
  approvalForAll,
  callWarnings,
  chainMismatch,
  REFUSED_DELEGATION,
  siweAddressMismatch,
  siweDomainMismatch,
  unknownCall,
  unlimitedApproval,
  unreadableToken,
} from '../src/frames/browser/review/warnings.js'

// The consent frame's catalogues (src/frames/browser/i18n): every locale has every key with the
// English `{name}`s; decoded English texts are shown in the active locale, numbers, amounts and
// dates through Intl; a request's own text (a message) never is.

/** A value isolated in a right-to-left sentence (U+2068 FIRST STRONG ISOLATE … U+2069 POP DIRECTIONAL ISOLATE). */
const isolated = (value: string) => `\u2068${value}\u2069`
const names = (text: string) => [...text.matchAll(/\{(\w+)\}/g)].map((found) => found[1]).sort()
const english: Record<string, string> = { ...en, ...dialog, ...values }

describe('consent frame catalogues', () => {
  test('default: each of the 16 locales has every key, with the same {name}s as English, and no empty text', async () => {
    expect(FRAME_LOCALES.length).toBe(16)
    for (const locale of FRAME_LOCALES) {
      await useFrameLocale(locale)
      for (const key of Object.keys(english) as (keyof typeof english & Parameters<typeof t>[0])[]) {
        const text = t(key)
        expect({ locale, key, names: names(text), empty: text.trim() === '' }).toEqual({ locale, key, names: names(english[key]!), empty: false })
      }
    }
    await useFrameLocale('en')
  })

  test('behavior: a decoded title, label or warning shows in the active locale; numbers through Intl; other text as it is', async () => {
    await useFrameLocale('ar')
    expect(frameLocale()).toBe('ar')
    expect(display('Sign typed data')).toBe('توقيع بيانات منظَّمة')
    expect(display('Send 3 calls at once')).toBe('إرسال 3 استدعاءات دفعة واحدة')
    expect(display('Call 12')).toBe('الاستدعاء 12')
    expect(display('0x70997970C51812dc3A010C7d01b50e0d17dc79C8')).toBe(isolated('0x70997970C51812dc3A010C7d01b50e0d17dc79C8'))
    expect(t('requestedBy', { origin: 'https://app.example' })).toBe(`مطلوب من ${isolated('https://app.example')}`)
    await useFrameLocale('de')
    expect(display('Send 1200 calls at once')).toBe('1.200 Aufrufe auf einmal senden')
    await useFrameLocale('en')
    expect(display('Send 3 calls at once')).toBe('Send 3 calls at once')
  })

  test('behavior: warnings with values show in the active locale, the values as they are, amounts through Intl to the last digit', async () => {
    const spender = '0x70997970C51812dc3A010C7d01b50e0d17dc79C8'
    const token = '0x5FbDB2315678afecb367f032d93F642f64180aa3'
    await useFrameLocale('de')
    expect(display(chainMismatch(1, 31337).text)).toBe('Diese Anfrage ist für Ethereum (1), aber die Wallet ist auf Anvil A (31337).')
    expect(display(unlimitedApproval(spender, 'TKN').text)).toBe(
      `Unbegrenzte Freigabe: ${spender} darf alle deine TKN nehmen, jetzt und später, bis du sie widerrufst.`,
    )
    expect(display(siweDomainMismatch('evil.example', 'app.example').text)).toBe(
      'Diese Anmeldung ist für evil.example, aber die Anfrage kommt von app.example: Wenn du sie signierst, kann sich diese Seite als du bei evil.example anmelden.',
    )
    expect(display(formatNative(1234000000000000000001n))).toBe('1.234,000000000000000001 ETH')
    expect(display(`up to ${formatNative(42000000000000n)}`)).toBe('bis zu 0,000042 ETH')
    expect(display(`Send ${formatTokenAmount(1500000000000000000000n, token, { symbol: 'TKN', decimals: 18 }).text} to ${spender}`)).toBe(
      `1.500 TKN an ${spender} senden`,
    )
    expect(display('You send 1.5 ETH')).toBe('Du sendest 1,5 ETH')
    expect(display(REFUSED_DELEGATION)).toBe('Eine Delegation an einen anderen Vertrag als den Executor der Wallet wird abgelehnt')
    await useFrameLocale('ar')
    expect(display(siweAddressMismatch(spender, token).text)).toBe(`يذكر تسجيل الدخول هذا الحساب ${isolated(spender)}، لا حسابك (${isolated(token)}).`)
    expect(display('You receive nothing')).toBe('لا تتلقى شيئًا')
    await useFrameLocale('hi')
    expect(display(formatNative(1234567000000000000000000n))).toBe('12,34,567 ETH')
    await useFrameLocale('en')
    expect(display(formatNative(1234500000000000000000n))).toBe('1,234.5 ETH')
  })

  test('behavior: a warning several calls raise shows once in the active locale, the calls listed as the locale lists numbers, a run of three as a range', async () => {
    const unknown = unknownCall('0x5FbDB2315678afecb367f032d93F642f64180aa3')
    const [five] = callWarnings([[unknown], [unknown], [unknown], [], [unknown], [unknown]])
    const [two] = callWarnings([[unknown], [unknown]])
    expect(five!.text).toBe(`Calls 1–3, 5, and 6: ${unknown.text}`)
    await useFrameLocale('de')
    expect(display(two!.text)).toBe(`Aufrufe 1 und 2: ${display(unknown.text)}`)
    expect(display(five!.text)).toBe(`Aufrufe 1–3, 5 und 6: ${display(unknown.text)}`)
    await useFrameLocale('ar')
    // Right to left, each value isolated (FSI … PDI): the list of calls and the warning.
    expect(display(five!.text)).toBe(`الاستدعاءات \u20681–3 و5 و6\u2069: \u2068${display(unknown.text)}\u2069`)
    await useFrameLocale('ja')
    expect(display(two!.text)).toBe(`呼び出し 1、2：${display(unknown.text)}`)
    await useFrameLocale('en')
    expect(display(five!.text)).toBe(five!.text)
  })

  test('behavior: dates in the locale, in UTC, with how far from now; a grant limit per period; every warning the review writes is in the catalogue', async () => {
    const now = Date.UTC(2030, 0, 1, 0, 0, 0)
    await useFrameLocale('de', () => now)
    expect(display(formatDate(Date.UTC(2030, 0, 3, 12) / 1000))).toBe('03.01.2030, 12:00:00 UTC (in 3 Tagen)')
    expect(display(`${formatNative(10000000000000000n)} per day, from ${formatDate(now / 1000 - 7200)}`)).toBe(
      '0,01 ETH pro Tag, ab 31.12.2029, 22:00:00 UTC (vor 2 Stunden)',
    )
    await useFrameLocale('fr', () => now)
    expect(display(`Allows 0x70997970C51812dc3A010C7d01b50e0d17dc79C8 to spend unlimited TKN until ${formatDate(Date.UTC(2031, 0, 1) / 1000)}`)).toBe(
      'Autorise 0x70997970C51812dc3A010C7d01b50e0d17dc79C8 à dépenser TKN illimités jusqu’au 1 janv. 2031, 00:00:00 UTC (l’année prochaine)',
    )
    const address = '0x70997970C51812dc3A010C7d01b50e0d17dc79C8'
    const english = [
      chainMismatch(1, 2),
      unlimitedApproval(address, 'TKN'),
      approvalForAll(address, 'NFT'),
      unknownCall(address),
      unreadableToken(address),
      siweDomainMismatch('a.example', 'b.example'),
      siweAddressMismatch(address, address),
      ...callWarnings([[unknownCall(address)], [unknownCall(address)]]),
    ].map((warning) => warning.text)
    for (const locale of FRAME_LOCALES.filter((locale) => locale !== 'en')) {
      await useFrameLocale(locale, () => now)
      expect({ locale, untranslated: english.filter((text) => display(text) === text) }).toEqual({ locale, untranslated: [] })
    }
    await useFrameLocale('en')
  })

  test("behavior: a row's value is shown translated only when the review wrote it; a message or a statement stays as the request has it", async () => {
    await useFrameLocale('de')
    expect(displayRow(en.rowMessage, 'You send nothing')).toBe('You send nothing')
    expect(displayRow(en.rowStatement, '1234.5 ETH')).toBe('1234.5 ETH')
    expect(displayRow(en.rowNetworkFee, 'about 1234.5 ETH')).toBe('etwa 1.234,5 ETH')
    expect(displayRow(en.rowTo, 'a new contract')).toBe('ein neuer Vertrag')
    expect(displayRow('Call 2', 'Send 1 ETH to 0x70997970C51812dc3A010C7d01b50e0d17dc79C8')).toBe('1 ETH an 0x70997970C51812dc3A010C7d01b50e0d17dc79C8 senden')
    expect(display('ETH limit')).toBe('ETH-Limit')
    await useFrameLocale('en')
  })

  test("behavior: the app's locale first (its language part), else the browser's first known language, else English", () => {
    const warnings: string[] = []
    expect(resolveFrameLocale('pt-BR', ['fr'], (line) => warnings.push(line))).toBe('pt')
    expect(resolveFrameLocale(null, ['xx', 'zh-Hant-TW', 'ja'], (line) => warnings.push(line))).toBe('zh')
    expect(resolveFrameLocale(undefined, ['xx'], (line) => warnings.push(line))).toBe('en')
    expect(warnings).toEqual([])
  })

  test('error: an unknown app locale is English, with a warning naming it', () => {
    const warnings: string[] = []
    expect(resolveFrameLocale('klingon', ['ar'], (line) => warnings.push(line))).toBe('en')
    expect(warnings).toEqual(['no catalogue for locale "klingon"; showing English. Supported: en, es, pt, fr, de, it, ru, tr, ar, he, hi, zh, ja, ko, id, vi'])
  })
})
