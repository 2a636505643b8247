import type { FrameRequest } from './channel.js'
import { INVALID_REQUEST_CODE, MAX_CONSENT_TEXT } from './consentMessages.js'
import { FrameError } from './encoding.js'

// Read-only kms queries (`/public/v1/query/*`: whoami, list wallets, get api keys) need a stamp
// too, and asking the user to approve each would train them to click Approve without reading. So
// the frame stamps a query without a prompt, but only a query: a body carrying an activity `type`
// or `parameters` (anything that could change or sign) is refused, whatever the parent calls it.
//   {type: STAMP_QUERY, requestId, value: {payload}} → {type: STAMP, value: {stampHeaderName, stampHeaderValue}, requestId}

export const STAMP_QUERY = 'STAMP_QUERY'

const invalid = (message: string) => new FrameError(message, INVALID_REQUEST_CODE)

/**
 * The body of a STAMP_QUERY request, checked to be a read-only query: a JSON object with no
 * activity `type` and no `parameters`.
 *
 * @example
 * const payload = parseStampQuery(frameRequest) // '{"organizationId":"…"}'
 */
export function parseStampQuery(frameRequest: FrameRequest): string {
  const value = frameRequest.value
  const payload = typeof value === 'object' && value !== null ? (value as { payload?: unknown }).payload : undefined
  if (typeof payload !== 'string' || payload.length === 0) throw invalid('STAMP_QUERY needs value {payload} (the query body to stamp, a string)')
  if (payload.length > MAX_CONSENT_TEXT) throw invalid(`STAMP_QUERY: payload is longer than ${MAX_CONSENT_TEXT} characters`)
  let body: unknown
  try {
    body = JSON.parse(payload)
  } catch {
    throw invalid('STAMP_QUERY: the payload is not a JSON kms query')
  }
  if (typeof body !== 'object' || body === null || Array.isArray(body)) throw invalid('STAMP_QUERY: the payload is not a JSON kms query')
  if (Object.hasOwn(body, 'type') || Object.hasOwn(body, 'parameters'))
    throw invalid('STAMP_QUERY stamps read-only queries only: an activity (a body with type or parameters) needs REVIEW_AND_STAMP')
  return payload
}
