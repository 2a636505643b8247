import { describe, expect, test } from 'vitest'
import { dialog } from '../src/frames/browser/i18n/dialog.js'
import { en } from '../src/frames/browser/i18n/en.js'
import { display, FRAME_LOCALES, frameLocale, resolveFrameLocale, t, useFrameLocale } from '../src/frames/browser/i18n/index.js'

// The consent frame's catalogues (src/frames/browser/i18n): every locale has every key with the
// English `{name}`s; decoded English texts are shown in the active locale, numbers through Intl.

const names = (text: string) => [...text.matchAll(/\{(\w+)\}/g)].map((found) => found[1]).sort()
const english: Record<string, string> = { ...en, ...dialog }

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
    expect(display('0x70997970C51812dc3A010C7d01b50e0d17dc79C8')).toBe('0x70997970C51812dc3A010C7d01b50e0d17dc79C8')
    expect(t('requestedBy', { origin: 'https://app.example' })).toBe('مطلوب من https://app.example')
    await useFrameLocale('de')
    expect(display('Send 1200 calls at once')).toBe('1.200 Aufrufe auf einmal senden')
    await useFrameLocale('en')
    expect(display('Send 3 calls at once')).toBe('Send 3 calls at once')
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
