import { z } from 'zod'
import { ServerError } from '../errors.js'
import type { RouteContext } from './context.js'

// Account linking (issue 28) changes what signs a user in: a passkey, an email. Those kms writes
// are stamped by the user's own key in the consent frame, after the user's Approve there, never
// by the backend's delegated user: a backend whose key leaked can then add no passkey and set no
// email to take an account over. The backend still decides whether the login is free (it claims
// the login's row first, and rolls back when the kms refuses), so it carries the stamped body to
// the kms itself, unchanged: the stamp covers every byte.

/** A kms activity body the consent frame stamped, as the page hands it to the backend. */
export const userStamped = z.object({
  // Room for a passkey attestation at its schema's largest (credential id, client data, attestation object).
  activity: z.string().min(2).max(32_768),
  stamp: z.object({
    stampHeaderName: z.enum(['X-Stamp', 'X-Stamp-Webauthn']),
    stampHeaderValue: z.string().min(1).max(8_192),
  }),
})
export type UserStamped = z.infer<typeof userStamped>

/** The activity inside `stamped`, parsed by `schema`; anything else is 400 `invalid_request`, before the kms is asked. */
export function stampedActivity<schema extends z.ZodType>(stamped: UserStamped, schema: schema): z.infer<schema> {
  let json: unknown
  try {
    json = JSON.parse(stamped.activity)
  } catch {
    throw new ServerError(400, 'invalid_request', 'activity: must be the JSON body the consent frame stamped')
  }
  const parsed = schema.safeParse(json)
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!
    throw new ServerError(400, 'invalid_request', `activity.${issue.path.join('.')}: ${issue.message}`)
  }
  return parsed.data
}

/**
 * Posts the user-stamped body to the kms's `submit/{op}` as it was stamped and answers the
 * activity's result. A refusal is the kms's own (status by its code, and `kms` in the answer);
 * an activity that did not complete is refused as the kms left it. Statuses: the kms's
 * 7 (permission) 403, 16 (a stamp of no user here) 401, 8 (rate) 429, anything else 400.
 */
export async function submitUserStamped(context: RouteContext, op: string, stamped: UserStamped): Promise<Record<string, unknown>> {
  let response: Response
  try {
    response = await fetch(`${context.kmsUrl}/public/v1/submit/${op}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', [stamped.stamp.stampHeaderName]: stamped.stamp.stampHeaderValue },
      body: stamped.activity,
      redirect: 'error',
    })
  } catch {
    throw new ServerError(502, 'kms_unavailable', 'The key-management service is unavailable')
  }
  const json = (await response.json().catch(() => undefined)) as
    | { code?: unknown; message?: unknown; details?: unknown; activity?: { status?: string; result?: Record<string, unknown> } }
    | undefined
  if (!response.ok) {
    const code = Number(json?.code)
    if (!Number.isInteger(code) || typeof json?.message !== 'string') throw new ServerError(502, 'kms_unavailable', 'The key-management service is unavailable')
    throw new ServerError(code === 8 ? 429 : code === 7 ? 403 : code === 16 ? 401 : 400, 'kms_refused', json.message, undefined, {
      code,
      message: json.message,
      details: json.details ?? null,
    })
  }
  const activity = json?.activity
  if (activity?.status !== 'ACTIVITY_STATUS_COMPLETED' || !activity.result)
    throw new ServerError(403, 'kms_refused', `The activity is ${activity?.status ?? 'unknown'}, not completed`)
  return activity.result
}
