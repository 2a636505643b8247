import type { FrameContext, FrameHandler, FrameReply, FrameRequest } from './channel.js'
import { INVALID_REQUEST_CODE, USER_REJECTED } from './consentMessages.js'
import type { MfaDialog, MfaElements } from './consentMfaBundle.js'
import { ENROLL_TOTP, MFA_RESULT, type MfaParameters, VERIFY_MFA } from './consentMfaNames.js'
import { FrameError } from './encoding.js'
import type { FrameKey } from './frameKeys.js'
import { t } from './i18n/index.js'
import { element } from './page.js'
import { stampWithSigningKey } from './signingKey.js'

// The second-factor flows of consentMfa.ts, loaded with the first ENROLL_TOTP or VERIFY_MFA so
// the consent page's first load stays small.

const CREATE_TOTP = 'ACTIVITY_TYPE_LATCHKEY_CREATE_TOTP_FACTOR'
const VERIFY = 'ACTIVITY_TYPE_LATCHKEY_VERIFY_MFA_FACTOR'
/** The kms's refusals the user can answer with another code. */
const RETRYABLE = new Set(['MFA_INVALID_CODE', 'MFA_FACTOR_LOCKED', 'MFA_RECOVERY_CODE_REFUSED'])

const invalid = (message: string) => new FrameError(message, INVALID_REQUEST_CODE)

function objectValue(request: FrameRequest, shape: string): Record<string, unknown> {
  const value = request.value
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw invalid(`${request.type} needs value ${shape}`)
  return value as Record<string, unknown>
}

function id(value: unknown, what: string, type: string): string {
  if (typeof value !== 'string' || value.length === 0 || value.length > 256 || !/^[\w.:-]+$/.test(value))
    throw invalid(`${type}: ${what} must be an id (letters, digits, ._:-)`)
  return value
}

type Flow = {
  readonly kind: 'enroll' | 'verify'
  readonly organizationId: string
  readonly key: FrameKey
  /** The ECDH key the kms seals the secret and the recovery codes to. */
  readonly target: FrameKey
  readonly stage: 'create' | 'code'
  readonly factorId?: string | undefined
}

/** A kms answer relayed by the page: its HTTP status and JSON body. */
function parseResult(request: FrameRequest): { status: number; body: Record<string, unknown> } {
  const value = objectValue(request, '{status, body}')
  const { status, body } = value
  if (typeof status !== 'number' || !Number.isInteger(status) || typeof body !== 'object' || body === null || Array.isArray(body))
    throw invalid('MFA_RESULT needs value {status, body}: the kms answer, as the page got it')
  return { status, body: body as Record<string, unknown> }
}

function resultOf(body: Record<string, unknown>, key: string): Record<string, unknown> {
  const activity = body['activity'] as { status?: unknown; result?: Record<string, unknown> } | undefined
  const result = activity?.result?.[key]
  if (activity?.status !== 'ACTIVITY_STATUS_COMPLETED' || typeof result !== 'object' || result === null) throw invalid(`MFA_RESULT: the answer has no ${key}`)
  return result as Record<string, unknown>
}

/** The kms's refusal: its message and ErrorInfo reason. */
function refusalOf(body: Record<string, unknown>): { message: string; reason: string | undefined } {
  const message = typeof body['message'] === 'string' ? body['message'].replace(/^Turnkey error \d+: /, '').slice(0, 512) : 'the kms refused the request'
  const details = Array.isArray(body['details']) ? (body['details'] as unknown[]) : []
  const info = details.find((detail): detail is { reason: string } => typeof (detail as { reason?: unknown })?.reason === 'string')
  return { message, reason: info?.reason }
}

/** The handlers of ENROLL_TOTP, VERIFY_MFA and MFA_RESULT (consentMfa.ts's `mfaHandlers` calls them). */
export function createMfaHandlers(parameters: MfaParameters): Record<string, FrameHandler> {
  let dialog: MfaDialog | undefined
  const bundles = () => import('./consentMfaBundle.js')
  /** The dialog, made on first use with its module (the consent page's first load stays small). */
  const dialogOf = async () => {
    const elements: MfaElements = {
      dialog: element('mfa'),
      title: element('mfa-title'),
      intro: element('mfa-intro'),
      setup: element('mfa-setup'),
      qr: element('mfa-qr'),
      secret: element('mfa-secret'),
      entry: element('mfa-entry'),
      label: element('mfa-code-label'),
      input: element<HTMLInputElement>('mfa-code'),
      toggle: element<HTMLButtonElement>('mfa-toggle'),
      error: element('mfa-error'),
      codes: element<HTMLOListElement>('mfa-codes'),
      verify: element<HTMLButtonElement>('mfa-verify'),
      cancel: element<HTMLButtonElement>('mfa-cancel'),
    }
    dialog ??= new (await bundles()).MfaDialog(elements, parameters.log)
    // The app's theme, as APPLY_SETTINGS set it (sanitised) on the review dialog.
    elements.dialog.style.cssText = element('review').style.cssText
    elements.title.style.cssText = element('review-title').style.cssText
    return dialog
  }
  let flow: Flow | undefined
  /** A code is never sent in clear: without the kms's code key the frame takes none. */
  const refuseWithoutCodeKey = (type: string) => {
    if (!/^04[0-9a-f]{128}$/.test(parameters.codeKey)) throw new FrameError(`${type}: this kms names no key to seal codes to (latchkey-mfa-code-key)`)
  }

  async function submit(op: string, type: string, current: Flow, params: Record<string, unknown>): Promise<FrameReply> {
    const body = JSON.stringify({ type, timestampMs: String(Date.now()), organizationId: current.organizationId, parameters: params })
    return { type: 'MFA_SUBMIT', value: { op, body, ...(await stampWithSigningKey(current.key, body)) } }
  }

  /** Asks for a code (with `error` shown) and answers the verify_mfa_factor body, or 4001. */
  async function askAndSubmit(current: Flow, error?: string): Promise<FrameReply> {
    const typed = await (await dialogOf()).askCode(error)
    if (typed === undefined) {
      flow = undefined
      dialog?.close()
      throw new FrameError(USER_REJECTED.message, USER_REJECTED.code)
    }
    flow = { ...current, stage: 'code' }
    const encryptedCodeBundle = await (await bundles()).sealCode({
      typed,
      codeKey: parameters.codeKey,
      factorId: current.factorId,
      organizationId: current.organizationId,
      publicKey: current.key.publicKeyHex,
    })
    return submit('verify_mfa_factor', VERIFY, current, {
      ...('code' in typed ? { factorId: current.factorId } : {}),
      encryptedCodeBundle,
      targetPublicKey: current.target.publicKeyHex,
    })
  }

  function fail(error: FrameError): never {
    flow = undefined
    dialog?.close()
    throw error
  }

  /**
   * The opening of ENROLL_TOTP and VERIFY_MFA: what the frame still shows closes, no code is taken
   * without the kms's code key, and the request names `{organizationId, <field>}`; then the
   * session key and a key of this flow only, which the kms seals its answers to.
   */
  async function begin(request: FrameRequest, context: FrameContext, field: 'userId' | 'factorId') {
    parameters.before?.()
    dialog?.close()
    flow = undefined
    refuseWithoutCodeKey(request.type)
    const value = objectValue(request, `{organizationId, ${field}}`)
    const organizationId = id(value['organizationId'], 'organizationId', request.type)
    const named = id(value[field], field, request.type)
    return { organizationId, named, key: await context.embeddedKey(), target: await (await bundles()).newTargetKey() }
  }

  return {
    async [ENROLL_TOTP](request: FrameRequest, context: FrameContext) {
      const { organizationId, named: userId, key, target } = await begin(request, context, 'userId')
      flow = { kind: 'enroll', organizationId, key, target, stage: 'create' }
      return submit('create_totp_factor', CREATE_TOTP, flow, { userId, targetPublicKey: target.publicKeyHex })
    },
    async [VERIFY_MFA](request: FrameRequest, context: FrameContext) {
      const { organizationId, named: factorId, key, target } = await begin(request, context, 'factorId')
      const current: Flow = { kind: 'verify', organizationId, key, target, stage: 'code', factorId }
      ;(await dialogOf()).open({
        title: t('mfaVerifyTitle'),
        intro: t('mfaVerifyIntro'),
        recoveryToggle: true,
      })
      return askAndSubmit(current)
    },
    async [MFA_RESULT](request: FrameRequest) {
      const current = flow
      if (current === undefined) throw invalid('MFA_RESULT answers no second-factor request: send ENROLL_TOTP or VERIFY_MFA first')
      const { status, body } = parseResult(request)
      const { openSecretBundle, openRecoveryCodesBundle, qrSvg } = await bundles()
      const refusal = status === 200 ? undefined : refusalOf(body)
      if (current.stage === 'create') {
        if (refusal) fail(new FrameError(refusal.message))
        let setup: { factorId: string; secret: string; otpauthUri: string }
        try {
          const result = resultOf(body, 'createTotpFactorResult')
          const factorId = id(result['factorId'], 'factorId', MFA_RESULT)
          if (typeof result['secretBundle'] !== 'string') throw invalid('MFA_RESULT: the answer has no secretBundle')
          setup = { factorId, ...(await openSecretBundle(result['secretBundle'], current.organizationId, parameters.signerPublicKeys, current.target)) }
        } catch (error) {
          fail(error instanceof FrameError ? invalid(`MFA_RESULT: ${error.message.replace(/^MFA_RESULT: /, '')}`) : (error as FrameError))
        }
        ;(await dialogOf()).open({
          title: t('mfaEnrolTitle'),
          intro: t('mfaEnrolIntro'),
          setup: { secret: setup.secret, qr: qrSvg(setup.otpauthUri, t('mfaQr')) },
          recoveryToggle: false,
        })
        return askAndSubmit({ ...current, factorId: setup.factorId })
      }
      if (refusal) {
        if (refusal.reason !== undefined && RETRYABLE.has(refusal.reason)) return askAndSubmit(current, capitalize(refusal.message))
        fail(new FrameError(refusal.message))
      }
      let codes: string[] | undefined
      try {
        const result = resultOf(body, 'verifyMfaFactorResult')
        const bundle = result['recoveryCodesBundle']
        codes =
          typeof bundle === 'string' ? await openRecoveryCodesBundle(bundle, current.organizationId, parameters.signerPublicKeys, current.target) : undefined
      } catch (error) {
        fail(error instanceof FrameError ? invalid(`MFA_RESULT: ${error.message.replace(/^MFA_RESULT: /, '')}`) : (error as FrameError))
      }
      flow = undefined
      if (codes !== undefined) await (await dialogOf()).showCodes(codes)
      dialog?.close()
      return current.kind === 'enroll' ? { type: 'TOTP_ENROLLED', value: { factorId: current.factorId } } : { type: 'MFA_VERIFIED', value: { verified: true } }
    },
  }
}

const capitalize = (text: string) => text.charAt(0).toUpperCase() + text.slice(1)
