import { FrameError } from './encoding.js'

// APPLY_SETTINGS: the embedding app restyles the secret's box within the properties of
// `TIframeStyles` (@turnkey/iframe-stamper), with plain values only (no url(), no
// expressions, nothing that could close the declaration). Checked whole before anything applies.

/** The `TIframeStyles` properties, as the CSS properties they set. `labelColor` colours the label. */
export const STYLE_PROPERTIES: Readonly<Record<string, string>> = {
  padding: 'padding',
  margin: 'margin',
  borderWidth: 'border-width',
  borderStyle: 'border-style',
  borderColor: 'border-color',
  borderRadius: 'border-radius',
  fontSize: 'font-size',
  fontWeight: 'font-weight',
  fontFamily: 'font-family',
  color: 'color',
  labelColor: 'color',
  backgroundColor: 'background-color',
  width: 'width',
  height: 'height',
  maxWidth: 'max-width',
  maxHeight: 'max-height',
  lineHeight: 'line-height',
  boxShadow: 'box-shadow',
  textAlign: 'text-align',
  overflowWrap: 'overflow-wrap',
  wordWrap: 'word-wrap',
  resize: 'resize',
}

export type StyleDeclaration = { readonly target: 'secret' | 'label'; readonly property: string; readonly value: string }

/**
 * The declarations an APPLY_SETTINGS value asks for. `accepts(property, value)` says whether the
 * browser parses the value (a detached element's style does in the frames).
 */
export function parseSettings(value: string, accepts: (property: string, value: string) => boolean): StyleDeclaration[] {
  let settings: unknown
  try {
    settings = JSON.parse(value)
  } catch {
    throw new FrameError('the settings are not JSON')
  }
  if (typeof settings !== 'object' || settings === null || Array.isArray(settings)) throw new FrameError('the settings are not a JSON object')
  const { styles, passphraseStyles, enablePassphrase, ...rest } = settings as Record<string, unknown>
  const unknown = Object.keys(rest)
  if (unknown.length) throw new FrameError(`unknown settings: ${unknown.join(', ').slice(0, 200)}`)
  if (enablePassphrase === true) throw new FrameError('BIP-39 passphrases are not supported: the kms imports wallets without one')
  const declarations = readStyles(styles, accepts)
  // Accepted for compatibility, checked, but there is no passphrase field to style.
  readStyles(passphraseStyles, accepts)
  return declarations
}

function readStyles(styles: unknown, accepts: (property: string, value: string) => boolean): StyleDeclaration[] {
  if (styles === undefined) return []
  if (typeof styles !== 'object' || styles === null || Array.isArray(styles)) throw new FrameError('styles must be an object')
  return Object.entries(styles).map(([name, value]) => {
    const property = Object.hasOwn(STYLE_PROPERTIES, name) ? STYLE_PROPERTIES[name] : undefined
    if (!property) throw new FrameError(`style ${name.slice(0, 40)} is not allowed; allowed: ${Object.keys(STYLE_PROPERTIES).join(', ')}`)
    if (typeof value !== 'string' || value.length > 120 || /[;{}<>\\]|\/\*|url\s*\(|image\s*\(|expression|@import|var\s*\(|attr\s*\(/i.test(value))
      throw new FrameError(`style ${name}: ${JSON.stringify(value)?.slice(0, 60)} is not an allowed value`)
    if (!accepts(property, value)) throw new FrameError(`style ${name}: ${JSON.stringify(value).slice(0, 60)} is not a valid ${property}`)
    return { target: name === 'labelColor' ? 'label' : 'secret', property, value }
  })
}

/** Checks `value` for `property` on a detached element, so nothing on screen changes until all pass. */
export function browserAccepts(property: string, value: string): boolean {
  const probe = document.createElement('div').style
  probe.setProperty(property, value)
  return probe.getPropertyValue(property) !== ''
}
