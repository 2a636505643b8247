import { encode } from 'uqr'
import { openExportBundle } from './bundles.js'
import { bytesToHex, FrameError, utf8Decode } from './encoding.js'
import type { FrameKey } from './frameKeys.js'

// ENROLL_TOTP's cryptography and QR code (consentMfa.ts), loaded when enrolment opens so the
// consent page's first load stays small: a key of this enrolment only (ECDH P-256, made here,
// non-extractable, in memory) that the kms seals the TOTP secret and the recovery codes to, the
// bundles checked against the kms's signer key and opened with it, and the otpauth URI drawn as an
// SVG built node by node (the page's CSP allows no images and no markup from strings).

/** A fresh ECDH key for one enrolment or verification; gone with the page. */
export async function newTargetKey(): Promise<FrameKey> {
  const pair = (await crypto.subtle.generateKey({ name: 'ECDH', namedCurve: 'P-256' }, false, ['deriveBits'])) as CryptoKeyPair
  const publicKey = new Uint8Array(await crypto.subtle.exportKey('raw', pair.publicKey))
  return { privateKey: pair.privateKey, publicKey, publicKeyHex: bytesToHex(publicKey), expiresAt: Number.POSITIVE_INFINITY }
}

async function openJson(bundle: string, organizationId: string, signerPublicKeys: readonly string[], key: FrameKey): Promise<unknown> {
  const plaintext = await openExportBundle({ bundle, organizationId, signerPublicKeys, embeddedKey: key })
  try {
    return JSON.parse(utf8Decode(plaintext))
  } catch {
    throw new FrameError('the bundle does not hold JSON')
  } finally {
    plaintext.fill(0)
  }
}

/** The TOTP secret and its otpauth URI from create_totp_factor's `secretBundle`, checked and opened. */
export async function openSecretBundle(
  bundle: string,
  organizationId: string,
  signerPublicKeys: readonly string[],
  key: FrameKey,
): Promise<{ secret: string; otpauthUri: string }> {
  const data = await openJson(bundle, organizationId, signerPublicKeys, key)
  const { secret, otpauthUri } = (typeof data === 'object' && data !== null ? data : {}) as Record<string, unknown>
  if (typeof secret !== 'string' || !/^[A-Z2-7]{16,128}$/.test(secret)) throw new FrameError('the secret bundle holds no base32 secret')
  if (typeof otpauthUri !== 'string' || !otpauthUri.startsWith('otpauth://totp/') || otpauthUri.length > 2048)
    throw new FrameError('the secret bundle holds no otpauth://totp/ URI')
  return { secret, otpauthUri }
}

/** The recovery codes from a `recoveryCodesBundle`, checked and opened. */
export async function openRecoveryCodesBundle(bundle: string, organizationId: string, signerPublicKeys: readonly string[], key: FrameKey): Promise<string[]> {
  const data = await openJson(bundle, organizationId, signerPublicKeys, key)
  if (!Array.isArray(data) || data.length === 0 || data.length > 32 || !data.every((code) => typeof code === 'string' && /^[a-z2-7-]{1,32}$/i.test(code)))
    throw new FrameError('the recovery codes bundle holds no list of codes')
  return data as string[]
}

/** `text` as a QR code: an SVG image (one path of dark modules) named `label`. */
export function qrSvg(text: string, label: string): SVGSVGElement {
  const { data, size } = encode(text, { ecc: 'M', border: 2 })
  const ns = 'http://www.w3.org/2000/svg'
  const svg = document.createElementNS(ns, 'svg')
  svg.setAttribute('viewBox', `0 0 ${size} ${size}`)
  svg.setAttribute('role', 'img')
  svg.setAttribute('aria-label', label)
  svg.setAttribute('shape-rendering', 'crispEdges')
  const background = document.createElementNS(ns, 'rect')
  background.setAttribute('width', String(size))
  background.setAttribute('height', String(size))
  background.setAttribute('fill', '#fff')
  let d = ''
  data.forEach((row, y) => {
    row.forEach((dark, x) => {
      if (dark) d += `M${x} ${y}h1v1h-1z`
    })
  })
  const path = document.createElementNS(ns, 'path')
  path.setAttribute('d', d)
  path.setAttribute('fill', '#000')
  svg.append(background, path)
  return svg
}
