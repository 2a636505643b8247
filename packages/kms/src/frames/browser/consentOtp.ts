import type { FrameContext, FrameHandler, FrameRequest } from './channel.js'
import { INVALID_REQUEST_CODE, USER_REJECTED } from './consentMessages.js'
import type { CollectOtpValue } from './consentOtpBundle.js'
import { FrameError } from './encoding.js'
import { t } from './i18n/index.js'
import { element } from './page.js'

// Codes the user types (email sign-in) are typed here, never in the app page (security review
// H1). The parent relays the kms's signed target bundle (init_otp V3):
//   {type: COLLECT_OTP, requestId, value: {targetBundle, email, otpId?}}
// The frame checks the bundle against the kms signer key baked into its page, asks for the code in
// its own dialog, naming the address the kms signed into the bundle (never only the page's), seals {otp_code, public_key} to the bundle's target (as @turnkey/crypto's
// encryptOtpCodeToBundle does) with its signing key as public_key, and signs the login of that key
// for otp_login V2. It answers
//   {type: OTP_COLLECTED, value: {encryptedOtpBundle, clientSignature, publicKey}, requestId}
// and never the code; Cancel or Escape answer 4001, a bundle the kms did not sign -32602.

export const COLLECT_OTP = 'COLLECT_OTP'

/** The code's length the dialog asks for: the kms's init_otp default. */
export const OTP_DIGITS = 6

const invalid = (message: string) => new FrameError(message, INVALID_REQUEST_CODE)

/**
 * The value of a COLLECT_OTP request, checked.
 *
 * @example
 * const { targetBundle, email } = parseCollectOtp(frameRequest)
 */
export function parseCollectOtp(request: FrameRequest): CollectOtpValue {
  const value = request.value
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw invalid('COLLECT_OTP needs value {targetBundle, email, otpId?}')
  const { targetBundle, email, otpId } = value as Record<string, unknown>
  if (typeof targetBundle !== 'string' || targetBundle.length === 0 || targetBundle.length > 4096)
    throw invalid('COLLECT_OTP: targetBundle must be the otpEncryptionTargetBundle init_otp answered')
  if (typeof email !== 'string' || !/^[^\s@]+@[^\s@]+$/.test(email) || email.length > 320)
    throw invalid('COLLECT_OTP: email must be the address the code went to')
  if (otpId !== undefined && (typeof otpId !== 'string' || otpId.length === 0 || otpId.length > 64)) throw invalid('COLLECT_OTP: otpId must be a string')
  return { targetBundle, email, ...(otpId === undefined ? {} : { otpId }) }
}

/** Whether `text` is a whole code: exactly six digits. */
export const isOtpCode = (text: string) => new RegExp(`^\\d{${OTP_DIGITS}}$`).test(text)

type OtpElements = {
  readonly dialog: HTMLElement
  readonly title: HTMLElement
  readonly email: HTMLElement
  readonly input: HTMLInputElement
  readonly error: HTMLElement
  readonly verify: HTMLButtonElement
  readonly cancel: HTMLButtonElement
}

/**
 * Asks for the code sent to `email` in the frame's own dialog. Resolves the code once the user
 * submits six digits with a trusted click on "Verify" or Enter in the field; `undefined` on a
 * trusted "Cancel" or Escape. Script-made events do nothing.
 */
export function askCode(elements: OtpElements, email: string, log: (message: string) => void): Promise<string | undefined> {
  const { dialog, input, verify, cancel } = elements
  showSent(elements, email)
  input.value = ''
  showError(elements, undefined)
  return new Promise((resolve) => {
    const finish = (code: string | undefined) => {
      verify.removeEventListener('click', onVerify)
      cancel.removeEventListener('click', onCancel)
      document.removeEventListener('keydown', onKey, true)
      input.value = ''
      showError(elements, undefined)
      elements.email.textContent = ''
      dialog.hidden = true
      resolve(code)
    }
    const submit = () => {
      const code = input.value.trim()
      if (isOtpCode(code)) return finish(code)
      showError(elements, t('otpInvalid', { digits: OTP_DIGITS }))
      input.focus()
    }
    const onVerify = (event: MouseEvent) => {
      if (event.isTrusted) submit()
      else log('ignored a click on Verify that a script made')
    }
    const onCancel = (event: MouseEvent) => {
      if (event.isTrusted) finish(undefined)
    }
    const onKey = (event: KeyboardEvent) => {
      if (!event.isTrusted) return
      if (event.key === 'Escape') {
        event.preventDefault()
        finish(undefined)
      } else if (event.key === 'Enter' && event.target === input) {
        event.preventDefault()
        submit()
      } else if (event.key === 'Tab') keepFocus(elements, event)
    }
    verify.addEventListener('click', onVerify)
    cancel.addEventListener('click', onCancel)
    document.addEventListener('keydown', onKey, true)
    dialog.hidden = false
    input.focus()
  })
}

/** "We sent a 6-digit code to <strong>email</strong>. …" in the active locale, the address in its own element. */
function showSent(elements: OtpElements, email: string) {
  const [before = '', after = ''] = t('otpSent', { digits: OTP_DIGITS }).split('{email}')
  elements.email.textContent = email
  elements.email.parentElement?.replaceChildren(before, elements.email, after)
}

function showError(elements: OtpElements, message: string | undefined) {
  elements.error.textContent = message ?? ''
  elements.error.hidden = message === undefined
  if (message === undefined) elements.input.removeAttribute('aria-invalid')
  else elements.input.setAttribute('aria-invalid', 'true')
}

/** Keeps Tab and Shift+Tab on the field and the two buttons. */
function keepFocus(elements: OtpElements, event: KeyboardEvent) {
  const order = [elements.input, elements.cancel, elements.verify]
  const at = order.indexOf(document.activeElement as HTMLInputElement & HTMLButtonElement)
  event.preventDefault()
  order[(at + (event.shiftKey ? order.length - 1 : 1)) % order.length]!.focus()
}

/**
 * The COLLECT_OTP handler of the consent frame, over its page's `#otp` dialog. `before` runs
 * first (the frame closes a refusal it still shows).
 *
 * @example
 * handlers: { [COLLECT_OTP]: collectOtp({ signerPublicKeys, log }) }
 */
export function collectOtp(parameters: { signerPublicKeys: readonly string[]; log: (message: string) => void; before?: () => void }): FrameHandler {
  const elements: OtpElements = {
    dialog: element('otp'),
    title: element('otp-title'),
    email: element('otp-email'),
    input: element<HTMLInputElement>('otp-code'),
    error: element('otp-error'),
    verify: element<HTMLButtonElement>('otp-verify'),
    cancel: element<HTMLButtonElement>('otp-cancel'),
  }
  const review = { dialog: element('review'), title: element('review-title') }
  return async (request: FrameRequest, context: FrameContext) => {
    parameters.before?.()
    const value = parseCollectOtp(request)
    // HPKE and the bundle checks load with the first code asked for, not with every review.
    const { readOtpTarget, sealOtpCode } = await import('./consentOtpBundle.js')
    // Checked before anything shows: a page cannot have the frame ask for a code it would seal elsewhere.
    const { target, otpId, email } = await readOtpTarget(value, parameters.signerPublicKeys).catch((error: unknown) => {
      throw error instanceof FrameError ? invalid(`COLLECT_OTP: ${error.message}`) : error
    })
    const key = await context.embeddedKey()
    // The app's theme, as APPLY_SETTINGS set it (sanitised) on the review dialog.
    elements.dialog.style.cssText = review.dialog.style.cssText
    elements.title.style.cssText = review.title.style.cssText
    const code = await askCode(elements, email, parameters.log)
    if (code === undefined) throw new FrameError(USER_REJECTED.message, USER_REJECTED.code)
    return { type: 'OTP_COLLECTED', value: await sealOtpCode({ code, target, otpId, key }) }
  }
}
