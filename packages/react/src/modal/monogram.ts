/** `data:` URL of an SVG document: icons stay inline, never a request to another origin. */
export const svgUrl = (markup: string): string => `data:image/svg+xml,${encodeURIComponent(markup)}`

const fallbackColor = '#5b4cf0'

/** WCAG relative luminance of a `#RRGGBB` colour. */
function luminance(hex: string): number {
  const [r = 0, g = 0, b = 0] = [1, 3, 5].map((at) => {
    const channel = Number.parseInt(hex.slice(at, at + 2), 16) / 255
    return channel <= 0.04045 ? channel / 12.92 : ((channel + 0.055) / 1.055) ** 2.4
  })
  return 0.2126 * r + 0.7152 * g + 0.0722 * b
}

/**
 * The generated icon of a wallet without one of its own: its initial on its brand colour, in white
 * or black, whichever contrasts more with that colour. A colour that is not `#RRGGBB` uses
 * Latchkey's accent.
 *
 * @example
 * monogram('Zeal', '#FFD400') // data:image/svg+xml,… a black "Z" on yellow
 */
export function monogram(name: string, color: string = fallbackColor): string {
  const fill = /^#[0-9a-f]{6}$/i.test(color) ? color : fallbackColor
  const light = luminance(fill)
  // Contrast with white is 1.05 / (L + 0.05), with black (L + 0.05) / 0.05.
  const ink = 1.05 / (light + 0.05) >= (light + 0.05) / 0.05 ? '#fff' : '#000'
  const initial = ([...name.trim()][0] ?? '?').toUpperCase().replace(/[&<>"']/g, (character) => `&#${character.charCodeAt(0)};`)
  return svgUrl(
    `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 64 64"><rect width="64" height="64" rx="14" fill="${fill}"/><text x="32" y="43" fill="${ink}" font-family="system-ui,sans-serif" font-size="30" font-weight="700" text-anchor="middle">${initial}</text></svg>`,
  )
}
