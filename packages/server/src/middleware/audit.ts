import type { AuditOutcome, AuditTrail } from '@latchkey/service/database'
import type { Context, MiddlewareHandler } from 'hono'
import { ServerError } from '../errors.js'
import type { SessionRow } from '../store.js'

/** What the routes learn about a request's person as they handle it: the email it names, the session it has or starts. */
type Notes = { email?: string; session?: Pick<SessionRow, 'email' | 'organization_id' | 'user_id' | 'address' | 'kind'> }

// Keyed by the request the routes read (after bodyLimit's), so helpers that see only the request can note.
const notes = new WeakMap<Request, Notes>()

const notesOf = (request: Request) => {
  let found = notes.get(request)
  if (!found) notes.set(request, (found = {}))
  return found
}

/** Notes the email a request's body names (readBody), for the audit event's keyed hash. */
export function noteEmail(request: Request, email: unknown) {
  if (typeof email === 'string') notesOf(request).email = email
}

/** Notes the session a request has or has just started: the audit event's actor. */
export function noteSession(request: Request, session: NonNullable<Notes['session']>) {
  notesOf(request).session = session
}

/**
 * Records the outcome of every `POST /auth/*` in the audit trail once it is answered: each
 * sign-in (email, passkey, OAuth, SIWE, recovery), sign-out and token
 * call, completed or refused with its code, with the session's user as the actor and keyed hashes
 * of the client's IP and of the email involved. Placed before the body limit so that its refusals
 * are recorded too.
 *
 * @example
 * app.use('/auth/*', auditAuth(trail, context.ipOf))
 */
export function auditAuth(trail: AuditTrail, ipOf: (c: Context) => string): MiddlewareHandler {
  return async (c, next) => {
    // Every change: the POSTs, and unlinking a login (DELETE /auth/user/logins/:id).
    if (c.req.method !== 'POST' && c.req.method !== 'DELETE') return next()
    await next()
    const noted = notes.get(c.req.raw) ?? {}
    const { session } = noted
    let outcome: AuditOutcome
    let reason: string | undefined
    if (c.error) {
      const refused = c.error instanceof ServerError && c.error.status < 500
      outcome = refused ? 'refused' : 'failed'
      reason = c.error instanceof ServerError ? `${c.error.status} ${c.error.code}: ${c.error.message}` : '500 internal'
    } else if (c.res.status >= 400) {
      outcome = c.res.status >= 500 ? 'failed' : 'refused'
      reason = String(c.res.status)
    } else outcome = 'completed'
    const target: Record<string, string> = {}
    if (session?.organization_id) target['organization'] = session.organization_id
    if (session?.user_id) target['user'] = session.user_id
    if (session?.address) target['address'] = session.address
    const node = c.env as { outgoing?: { getHeader(name: string): unknown } } | undefined
    await trail.record({
      action: `${c.req.method} ${c.req.path}`,
      outcome,
      reason,
      actorOrganization: session?.organization_id,
      actorUser: session?.user_id ?? session?.address,
      credential: session ? `session ${session.kind}` : undefined,
      target,
      requestId: String(node?.outgoing?.getHeader('x-request-id') ?? '') || undefined,
      ip: ipOf(c),
      email: noted.email ?? session?.email,
    })
  }
}
