// @vitest-environment happy-dom

import { cleanup, screen } from '@testing-library/react'
import userEvent from '@testing-library/user-event'
import { afterEach, describe, expect, test } from 'vitest'
import { renderWithClient } from '../../../test/react.js'
import { ConnectButton } from './ConnectButton.js'
import { createTheme, themes } from './theme.js'

afterEach(cleanup)

/** The dialog's backgrounds (styles.css `--lk-bg`), light and dark. */
const background = { light: '#ffffff', dark: '#1a1826' }

function luminance(hex: string) {
  const [r = 0, g = 0, b = 0] = [1, 3, 5].map((at) => {
    const channel = Number.parseInt(hex.slice(at, at + 2), 16) / 255
    return channel <= 0.04045 ? channel / 12.92 : ((channel + 0.055) / 1.055) ** 2.4
  })
  return 0.2126 * r + 0.7152 * g + 0.0722 * b
}
const contrast = (a: string, b: string) => {
  const [high, low] = [luminance(a), luminance(b)].sort((x, y) => y - x) as [number, number]
  return (high + 0.05) / (low + 0.05)
}
/** A `#rrggbb` or `light-dark(#light, #dark)` value in one scheme. */
const inScheme = (value: string, scheme: 'light' | 'dark') => {
  const pair = /^light-dark\((#[0-9a-f]{6}), (#[0-9a-f]{6})\)$/i.exec(value)
  return pair ? (pair[scheme === 'light' ? 1 : 2] as string) : value
}

describe('createTheme', () => {
  test('default: the accent, radius and font as CSS variables, the mode apart', () => {
    expect(createTheme({ accent: '#0a7d4f', accentForeground: '#ffffff', radius: 6, font: 'Inter, sans-serif', mode: 'dark' })).toEqual({
      mode: 'dark',
      variables: { '--lk-accent': '#0a7d4f', '--lk-accent-fg': '#ffffff', '--lk-link': '#0a7d4f', '--lk-radius': '6px', '--lk-font': 'Inter, sans-serif' },
    })
  })

  test("behavior: what is left out keeps Latchkey's default; a radius may be any CSS length", () => {
    expect(createTheme()).toEqual({ mode: 'auto', variables: {} })
    expect(createTheme({ radius: '0.5rem' })).toEqual({ mode: 'auto', variables: { '--lk-radius': '0.5rem' } })
  })

  test('default: three built-in themes, each AA (4.5:1) for text on the accent and accent text on the dialog, light and dark', () => {
    expect(Object.keys(themes)).toEqual(['latchkey', 'ocean', 'mono'])
    for (const [name, theme] of Object.entries(themes))
      for (const scheme of ['light', 'dark'] as const) {
        const variables = theme.variables as Record<string, string>
        const accent = inScheme(variables['--lk-accent'] as string, scheme)
        const onAccent = inScheme(variables['--lk-accent-fg'] as string, scheme)
        const link = inScheme(variables['--lk-link'] as string, scheme)
        expect(contrast(onAccent, accent), `${name} ${scheme}: text on the accent`).toBeGreaterThanOrEqual(4.5)
        expect(contrast(link, background[scheme]), `${name} ${scheme}: accent text on the dialog`).toBeGreaterThanOrEqual(4.5)
      }
  })
})

describe('the theme option', () => {
  test('behavior: a theme styles the button and the modal and sets its scheme', async () => {
    renderWithClient(<ConnectButton />, { theme: createTheme({ accent: '#0a5dc2', radius: 8, mode: 'dark' }) })
    const button = screen.getByRole('button', { name: 'Connect Wallet' })
    expect([button.style.getPropertyValue('--lk-accent'), button.style.getPropertyValue('--lk-radius')]).toEqual(['#0a5dc2', '8px'])
    await userEvent.click(button)
    await screen.findByRole('dialog', { name: 'Connect a wallet' })
    const backdrop = document.querySelector('.lk-backdrop') as HTMLElement
    expect(backdrop.dataset.lkTheme).toBe('dark')
    expect([backdrop.style.getPropertyValue('--lk-accent'), backdrop.style.getPropertyValue('--lk-link')]).toEqual(['#0a5dc2', '#0a5dc2'])
  })

  test('behavior: a plain mode sets the scheme alone', async () => {
    renderWithClient(<ConnectButton />, { theme: 'light' })
    const button = screen.getByRole('button', { name: 'Connect Wallet' })
    expect(button.getAttribute('style')).toBeNull()
    await userEvent.click(button)
    await screen.findByRole('dialog', { name: 'Connect a wallet' })
    const backdrop = document.querySelector('.lk-backdrop') as HTMLElement
    expect([backdrop.dataset.lkTheme, backdrop.getAttribute('style')]).toEqual(['light', null])
  })
})
