import type { AuditOutcome, AuditTrail } from '@latchkey/service/database'
import type { MiddlewareHandler } from 'hono'
import { GrpcCode, KmsError } from '../errors.js'
import type { Authenticated } from './authenticate.js'
import type { StageProfile } from './stages.js'

/** Set on a request refused from memory: its audit event is the block's summary (see `createRateLimiter`), not one per request. */
export type RefusedFromMemory = { refusedFromMemory: true }

/** The activity a submission was answered with, as the activity routes tell the audit middleware. */
export type AuditedActivity = { audited: { id: string; status: string } }

/** Stored activity statuses as audit outcomes. */
const OUTCOMES: Readonly<Record<string, AuditOutcome>> = {
  ACTIVITY_STATUS_COMPLETED: 'completed',
  ACTIVITY_STATUS_CONSENSUS_NEEDED: 'consensus_needed',
  ACTIVITY_STATUS_FAILED: 'failed',
  ACTIVITY_STATUS_REJECTED: 'refused',
}

/** Parameters that name what an activity acts on, and the target kind each one is. */
const TARGET_PARAMETERS = [
  ['userId', 'user'],
  ['walletId', 'wallet'],
  ['privateKeyId', 'privateKey'],
  ['signWith', 'signWith'],
  ['policyId', 'policy'],
  ['fingerprint', 'activityFingerprint'],
] as const

const EMAIL = /^[^\s@]+@[^\s@]+$/

type Body = Record<string, unknown>

/** The body as JSON, when it is an object (a request refused before authenticate parsed it). */
function parsed(raw: Uint8Array | undefined): Body | undefined {
  if (!raw) return undefined
  try {
    const body = JSON.parse(new TextDecoder().decode(raw)) as unknown
    return typeof body === 'object' && body !== null && !Array.isArray(body) ? (body as Body) : undefined
  } catch {
    return undefined
  }
}

/** The public key an `X-Stamp` names (base64url JSON), whether or not it verified; a passkey stamp's credential id. */
export function claimedCredential(stamp: string | undefined, passkey: string | undefined): string | undefined {
  try {
    if (stamp) return String((JSON.parse(Buffer.from(stamp, 'base64url').toString('utf8')) as { publicKey?: unknown }).publicKey ?? '') || undefined
    if (passkey) return String((JSON.parse(passkey) as { credentialId?: unknown }).credentialId ?? '') || undefined
  } catch {
    return undefined
  }
  return undefined
}

/**
 * Records every submission's outcome in the audit trail, after it is answered and before the
 * answer leaves: completed, waiting for consensus, failed, or refused, whether by authentication
 * (a bad stamp, an expired key), by the permission check or by the activity itself. A refusal
 * writes nothing else; its audit event is the one row it leaves. The only reads are the chain
 * head, in the append's transaction.
 *
 * @example
 * app.use('/public/v1/submit/*', auditSubmissions(trail), bodyLimit(maxBodyBytes), authenticate(options))
 */
export function auditSubmissions(
  trail: AuditTrail,
  stages?: StageProfile | undefined,
): MiddlewareHandler<{ Variables: Partial<Authenticated & AuditedActivity & RefusedFromMemory> }> {
  return async (c, next) => {
    await next()
    stages?.lap('serialisation')
    // A rate limit's refusals answered from memory are summarised by the limiter, one event per block.
    if (c.var.refusedFromMemory) return
    const { caller, audited } = c.var
    // Authenticated requests carry their parsed body; a refused one is read here, off the hot path.
    const body = c.var.body ?? parsed(c.var.raw)
    const parameters = typeof body?.['parameters'] === 'object' && body['parameters'] !== null ? (body['parameters'] as Body) : {}
    const target: Record<string, string> = {}
    const organization = caller?.organizationId ?? body?.['organizationId']
    if (typeof organization === 'string') target['organization'] = organization
    for (const [parameter, kind] of TARGET_PARAMETERS) if (typeof parameters[parameter] === 'string') target[kind] = parameters[parameter] as string
    if (audited) target['activity'] = audited.id
    const email = [parameters['email'], parameters['contact']].find((value): value is string => typeof value === 'string' && EMAIL.test(value))

    let outcome: AuditOutcome
    let reason: string | undefined
    if (c.error) {
      const known = c.error instanceof KmsError && c.error.code !== GrpcCode.internal
      outcome = known ? 'refused' : 'failed'
      reason = c.error instanceof KmsError ? `${c.error.code} ${c.error.message}` : `${GrpcCode.internal} internal error`
    } else {
      outcome = (audited && OUTCOMES[audited.status]) || (c.res.ok ? 'completed' : 'failed')
    }
    const node = c.env as { incoming?: { socket?: { remoteAddress?: string } }; outgoing?: { getHeader(name: string): unknown } } | undefined
    await trail.record({
      action: typeof body?.['type'] === 'string' ? body['type'] : `submit ${c.req.path.split('/').at(-1)}`,
      outcome,
      reason,
      actorOrganization: caller?.homeOrganizationId,
      actorUser: caller?.userId,
      credential: caller?.credential ?? claimedCredential(c.req.header('x-stamp'), c.req.header('x-stamp-webauthn')),
      target,
      // The node adapter's request and response: the client's address, and the id the HTTP observer gave the request.
      ip: node?.incoming?.socket?.remoteAddress,
      requestId: String(node?.outgoing?.getHeader('x-request-id') ?? '') || undefined,
      email,
    })
    stages?.lap('audit')
  }
}
