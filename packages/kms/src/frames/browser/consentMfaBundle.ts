import { encode } from 'uqr'
import { openExportBundle, sealImportBundle } from './bundles.js'
import { bytesToHex, FrameError, hexToBytes, utf8Decode, utf8Encode } from './encoding.js'
import type { FrameKey } from './frameKeys.js'
import { t } from './i18n/index.js'
import { uncompressedPoint } from './p256.js'

// ENROLL_TOTP's and VERIFY_MFA's dialog, cryptography and QR code (consentMfa.ts), loaded when
// second factor is first asked for so the
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

/**
 * The typed code sealed to the kms's code key (`latchkey-mfa-code-key`) for verify_mfa_factor's
 * `encryptedCodeBundle`, bound to the organization, the factor (a TOTP code) and the session key
 * that stamps the body: the page that carries the body reads no digit of it.
 *
 * @example
 * const encryptedCodeBundle = await sealCode({ typed: { code: '123456' }, codeKey, factorId, organizationId, publicKey })
 */
export async function sealCode(parameters: {
  typed: Typed
  codeKey: string
  factorId: string | undefined
  organizationId: string
  publicKey: string
}): Promise<string> {
  const { typed, codeKey, factorId, organizationId, publicKey } = parameters
  const inner = 'code' in typed ? { code: typed.code, factorId, organizationId, publicKey } : { recoveryCode: typed.recoveryCode, organizationId, publicKey }
  return sealImportBundle(uncompressedPoint(hexToBytes(codeKey, 'latchkey-mfa-code-key')), utf8Encode(JSON.stringify(inner)))
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

const RECOVERY_CODE = /^[a-z2-7]{4}-?[a-z2-7]{4}-?[a-z2-7]{4}$/i

export type Typed = { readonly code: string } | { readonly recoveryCode: string }

export type MfaElements = {
  readonly dialog: HTMLElement
  readonly title: HTMLElement
  readonly intro: HTMLElement
  readonly setup: HTMLElement
  readonly qr: HTMLElement
  readonly secret: HTMLElement
  readonly entry: HTMLElement
  readonly label: HTMLElement
  readonly input: HTMLInputElement
  readonly toggle: HTMLButtonElement
  readonly error: HTMLElement
  readonly codes: HTMLOListElement
  readonly verify: HTMLButtonElement
  readonly cancel: HTMLButtonElement
}

/** The dialog: asks for a code (or, where allowed, a recovery code), or shows recovery codes. */
export class MfaDialog {
  recovery = false
  constructor(
    readonly elements: MfaElements,
    readonly log: (message: string) => void,
  ) {}

  open(parameters: { title: string; intro: string; setup?: { secret: string; qr: SVGSVGElement } | undefined; recoveryToggle: boolean }) {
    const { elements } = this
    elements.title.textContent = parameters.title
    elements.intro.textContent = parameters.intro
    elements.secret.textContent = parameters.setup ? (parameters.setup.secret.match(/.{1,4}/g) ?? []).join(' ') : ''
    elements.qr.replaceChildren(...(parameters.setup ? [parameters.setup.qr] : []))
    elements.setup.hidden = parameters.setup === undefined
    elements.toggle.hidden = !parameters.recoveryToggle
    elements.codes.replaceChildren()
    elements.codes.hidden = true
    elements.entry.hidden = false
    elements.cancel.hidden = false
    elements.verify.textContent = t('verify')
    this.useRecovery(false)
    this.showError(undefined)
    elements.dialog.hidden = false
  }

  close() {
    const { elements } = this
    elements.dialog.hidden = true
    elements.input.value = ''
    elements.secret.textContent = ''
    elements.qr.replaceChildren()
    elements.codes.replaceChildren()
    this.showError(undefined)
    this.busy(false)
  }

  busy(busy: boolean) {
    this.elements.input.disabled = busy
    this.elements.verify.disabled = busy
    this.elements.toggle.disabled = busy
  }

  useRecovery(recovery: boolean) {
    const { label, input, toggle } = this.elements
    this.recovery = recovery
    label.textContent = t(recovery ? 'mfaRecoveryLabel' : 'mfaCodeLabel')
    input.inputMode = recovery ? 'text' : 'numeric'
    input.autocomplete = recovery ? 'off' : 'one-time-code'
    input.maxLength = recovery ? 14 : 6
    input.value = ''
    toggle.textContent = t(recovery ? 'mfaUseApp' : 'mfaUseRecovery')
  }

  showError(message: string | undefined) {
    const { error, input } = this.elements
    error.textContent = message ?? ''
    error.hidden = message === undefined
    if (message === undefined) input.removeAttribute('aria-invalid')
    else input.setAttribute('aria-invalid', 'true')
  }

  /** Waits for a code, a trusted click on Verify or Enter in the field; `undefined` on Cancel or Escape. */
  askCode(error?: string): Promise<Typed | undefined> {
    const { elements, log } = this
    this.busy(false)
    elements.input.value = ''
    this.showError(error)
    return this.waitFor({
      submit: () => {
        const text = elements.input.value.trim()
        if (this.recovery) {
          if (RECOVERY_CODE.test(text)) return { recoveryCode: text }
          this.showError(t('mfaInvalidRecovery'))
        } else {
          if (/^\d{6}$/.test(text)) return { code: text }
          this.showError(t('mfaInvalidCode'))
        }
        elements.input.focus()
        return undefined
      },
      cancel: true,
      log,
      focus: elements.input,
    })
  }

  /** Shows the recovery codes until a trusted click on Done (or Enter, or Escape). */
  async showCodes(codes: readonly string[]): Promise<void> {
    const { elements, log } = this
    this.busy(false)
    this.showError(undefined)
    elements.title.textContent = t('mfaCodesTitle')
    elements.intro.textContent = t('mfaCodesIntro')
    elements.setup.hidden = true
    elements.secret.textContent = ''
    elements.qr.replaceChildren()
    elements.entry.hidden = true
    elements.cancel.hidden = true
    elements.verify.textContent = t('done')
    elements.codes.replaceChildren(
      ...codes.map((code) => {
        const item = document.createElement('li')
        item.textContent = code
        return item
      }),
    )
    elements.codes.hidden = false
    await this.waitFor({ submit: () => ({ code: '' }), cancel: false, log, focus: elements.verify })
  }

  private waitFor(parameters: {
    submit: () => Typed | undefined
    cancel: boolean
    log: (message: string) => void
    focus: HTMLElement
  }): Promise<Typed | undefined> {
    const { verify, cancel, toggle, input, dialog } = this.elements
    return new Promise((resolve) => {
      const finish = (typed: Typed | undefined) => {
        verify.removeEventListener('click', onVerify)
        cancel.removeEventListener('click', onCancel)
        toggle.removeEventListener('click', onToggle)
        document.removeEventListener('keydown', onKey, true)
        resolve(typed)
      }
      const submit = () => {
        const typed = parameters.submit()
        if (typed !== undefined) {
          this.busy(true)
          finish(typed)
        }
      }
      const onVerify = (event: MouseEvent) => {
        if (event.isTrusted) submit()
        else parameters.log('ignored a click on Verify that a script made')
      }
      const onCancel = (event: MouseEvent) => {
        if (event.isTrusted) finish(undefined)
      }
      const onToggle = (event: MouseEvent) => {
        if (!event.isTrusted) return
        this.useRecovery(!this.recovery)
        this.showError(undefined)
        input.focus()
      }
      const onKey = (event: KeyboardEvent) => {
        if (!event.isTrusted) return
        if (event.key === 'Escape') {
          event.preventDefault()
          if (parameters.cancel) finish(undefined)
          else submit()
        } else if (event.key === 'Enter' && (event.target === input || !parameters.cancel)) {
          event.preventDefault()
          submit()
        } else if (event.key === 'Tab') {
          // Focus stays in the dialog.
          const order = [...dialog.querySelectorAll<HTMLElement>('input, button')].filter(
            (candidate) => !candidate.closest('[hidden]') && !(candidate as HTMLButtonElement).disabled,
          )
          event.preventDefault()
          const at = order.indexOf(document.activeElement as HTMLElement)
          order[(at + (event.shiftKey ? order.length - 1 : 1)) % order.length]?.focus()
        }
      }
      verify.addEventListener('click', onVerify)
      cancel.addEventListener('click', onCancel)
      toggle.addEventListener('click', onToggle)
      document.addEventListener('keydown', onKey, true)
      parameters.focus.focus()
    })
  }
}
