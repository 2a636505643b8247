import { INVALID_REQUEST_CODE } from '../consentMessages.js'
import { FrameError } from '../encoding.js'
import { sameAddress } from '../review/format.js'
import type { ReviewRow, ReviewWarning } from '../review/types.js'

// What every payload check shares: the body read as a kms activity, the refusal they throw, and
// what a check may add to the dialog (what only the payload says: the key an export goes to, the
// expiry of a new credential).

/** A refusal of the payload: -32602 to the parent, shown in the dialog. */
export const unbound = (message: string) => new FrameError(message, INVALID_REQUEST_CODE)

export type Activity = { readonly type: unknown; readonly parameters: Record<string, unknown> }

/** What the frame knows on its own, never from the page: its settings and its other keys. */
export type PayloadSettings = {
  /** The batch executor (kms setting): the only EIP-7702 delegate, the target of a batch. */
  readonly executor?: `0x${string}` | undefined
  /** The export frame's embedded key for this parent (uncompressed hex), read from this origin's storage. */
  readonly exportKey?: string | undefined
}

/** Rows and warnings the payload adds to the review. */
export type PayloadFacts = { readonly rows?: readonly ReviewRow[]; readonly warnings?: readonly ReviewWarning[] }

export const isObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value)

/** Throws unless the activity is of one of `types`. */
export function assertType(activity: Activity, types: readonly string[], what: string): string {
  if (typeof activity.type !== 'string' || !types.includes(activity.type))
    throw unbound(`the payload is not ${what} (${types.join(' or ')}), it is ${String(activity.type)}`)
  return activity.type
}

/** Throws unless the activity signs with the context's account. */
export function assertSignWith(activity: Activity, account: string): void {
  const { signWith } = activity.parameters
  if (typeof signWith !== 'string' || !sameAddress(signWith, account))
    throw unbound(`the payload signs with ${String(signWith)}, not with the account ${account}`)
}
