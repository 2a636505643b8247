// What the recovery frame stamps with the credential a recovery email carries (security review
// H1): the reads that tell whose credential it is, the sign-in of the wallet key this browser's
// consent frame holds, and the new passkey a lost-passkey recovery registers. Never an export, a
// key of the page's choosing or anything else: the page asks for the stamps, so a script in it
// must not be able to spend the credential on its own ends.

/** The activities a recovery credential signs, besides queries. */
export const RECOVERY_ACTIVITIES = ['ACTIVITY_TYPE_STAMP_LOGIN', 'ACTIVITY_TYPE_RECOVER_USER'] as const

/**
 * Why the recovery frame refuses to stamp `body`, or undefined when it may: a query (a body with
 * no activity `type`: it reads, and no activity route takes it), a stamp_login of `consentKey`
 * (the consent frame's signing key for this parent, compressed hex; undefined when it has none),
 * or recover_user.
 *
 * @example
 * recoveryStampRefusal('{"type":"ACTIVITY_TYPE_EXPORT_WALLET"}', key) // 'the recovery credential does not sign ACTIVITY_TYPE_EXPORT_WALLET'
 */
export function recoveryStampRefusal(body: string, consentKey: string | undefined): string | undefined {
  let request: unknown
  try {
    request = JSON.parse(body)
  } catch {
    return 'the recovery credential stamps only JSON requests'
  }
  if (typeof request !== 'object' || request === null || Array.isArray(request)) return 'the recovery credential stamps only JSON requests'
  const { type, parameters } = request as { type?: unknown; parameters?: unknown }
  if (type === undefined) return undefined
  if (type === 'ACTIVITY_TYPE_RECOVER_USER') return undefined
  if (type !== 'ACTIVITY_TYPE_STAMP_LOGIN') return `the recovery credential does not sign ${String(type).slice(0, 80)}`
  const publicKey = (parameters as { publicKey?: unknown } | undefined)?.publicKey
  if (consentKey === undefined) return 'the recovery credential signs in only the wallet key of this browser, and it has none'
  if (typeof publicKey !== 'string' || publicKey.toLowerCase() !== consentKey.toLowerCase())
    return "the recovery credential signs in only the wallet key of this browser's consent frame"
  return undefined
}
