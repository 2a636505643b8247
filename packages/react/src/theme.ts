/** Which colour scheme the modals use: `auto` follows the system. */
export type ThemeMode = 'light' | 'dark' | 'auto'

/** The CSS custom properties of a theme (`--lk-accent`, `--lk-radius`, …), as a React `style`. */
export type ThemeVariables = Readonly<Record<`--lk-${string}`, string>>

/** A theme for `<LatchkeyProvider theme>`: its colour scheme and the CSS variables it sets. */
export type Theme = { readonly mode: ThemeMode; readonly variables: ThemeVariables }

export type CreateThemeParameters = {
  /** Colour scheme; default `auto`. */
  mode?: ThemeMode | undefined
  /** Background of primary buttons and the focus ring. Any CSS colour; `light-dark(a, b)` picks by scheme. */
  accent?: string | undefined
  /** Text on the accent: it needs 4.5:1 contrast with it (WCAG AA). */
  accentForeground?: string | undefined
  /** Accent-coloured text on the dialog's background (text buttons, badges): 4.5:1 with it, in both schemes. Default: the accent. */
  link?: string | undefined
  /** Corner radius of buttons and rows: a number of pixels or a CSS length. */
  radius?: number | string | undefined
  /** Font stack of the button and the modals. */
  font?: string | undefined
}

/**
 * A theme from an accent, a radius, a font and a colour scheme; what is left out keeps Latchkey's
 * default. Pass it as `<LatchkeyProvider theme>`: the button and every modal take it.
 *
 * @example
 * const brand = createTheme({ accent: '#0a7d4f', radius: 6, font: 'Inter, sans-serif', mode: 'dark' })
 */
export function createTheme({ mode = 'auto', accent, accentForeground, link, radius, font }: CreateThemeParameters = {}): Theme {
  const variables: Record<`--lk-${string}`, string> = {}
  if (accent !== undefined) variables['--lk-accent'] = accent
  if (accentForeground !== undefined) variables['--lk-accent-fg'] = accentForeground
  if ((link ?? accent) !== undefined) variables['--lk-link'] = (link ?? accent) as string
  if (radius !== undefined) variables['--lk-radius'] = typeof radius === 'number' ? `${radius}px` : radius
  if (font !== undefined) variables['--lk-font'] = font
  return { mode, variables }
}

/**
 * The built-in themes, each AA in light and dark (`theme.test.ts` computes the contrasts;
 * `e2e/a11y.e2e.ts` runs axe on them): `latchkey` (the default's violet, rounded), `ocean` (blue,
 * tighter corners) and `mono` (black and white, square, monospaced).
 *
 * @example
 * <LatchkeyProvider client={client} theme={themes.ocean}>…</LatchkeyProvider>
 */
export const themes = {
  latchkey: /* @__PURE__ */ createTheme({ accent: '#5b4cf0', accentForeground: '#ffffff', link: 'light-dark(#5b4cf0, #b8afff)', radius: 14 }),
  ocean: /* @__PURE__ */ createTheme({ accent: '#0a5dc2', accentForeground: '#ffffff', link: 'light-dark(#0a5dc2, #8cc8ff)', radius: 8 }),
  mono: /* @__PURE__ */ createTheme({
    accent: 'light-dark(#18181b, #f4f4f5)',
    accentForeground: 'light-dark(#ffffff, #18181b)',
    link: 'light-dark(#18181b, #f4f4f5)',
    radius: 2,
    font: 'ui-monospace, SFMono-Regular, Menlo, Consolas, monospace',
  }),
} as const satisfies Record<string, Theme>
