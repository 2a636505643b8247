import { createHash, randomUUID } from 'node:crypto'
import type { Logger } from '@latchkey/service'
import { p256 } from '@noble/curves/p256'
import { Hono } from 'hono'
import { ACTIVITIES, type ActivityContext, type Caller } from './activities.js'
import { rootUserIds } from './admin/quorum.js'
import { readSessionJwt } from './credentials.js'
import type { ActivityRow, Db } from './db.js'
import { expiredKeyMessage, GrpcCode, KmsError, UNKNOWN_KEY_MESSAGE } from './errors.js'
import { devInbox, type Mailer, mailboxJson, mailboxPage } from './mail.js'
import { createQueries } from './queries.js'
import { verifyApiKeyStamp } from './stamp.js'
import { timestamp, userView } from './views.js'
import { parseWebauthnStamp, verifyWebauthnStamp, type WebauthnConfig } from './webauthn.js'

/** Passkeys of the local demo. */
export const DEFAULT_WEBAUTHN: WebauthnConfig = { rpIds: ['localhost'], origins: ['http://localhost:5173'] }

export type KmsAppOptions = {
  db: Db
  /** 32 bytes: seals wallet mnemonics and keys at rest. */
  masterKey: Uint8Array
  /** P-256 private key (hex) that signs export and import bundles; its public key is published. */
  signerPrivateKey: string
  /** Relying party ids and origins passkeys may come from. Default: `localhost`, http://localhost:5173. */
  webauthn?: WebauthnConfig | undefined
  /** Where sign-in emails go. Default: the dev inbox, served at /dev/mailbox. */
  mailer?: Mailer | undefined
  /** Clock in unix ms; tests move it to expire keys. */
  now?: (() => number) | undefined
  /** Largest request body accepted, in bytes. Default 256 KiB. */
  maxBodyBytes?: number | undefined
  /** Where unexpected errors (answered 500) are logged. Default: the console. */
  logger?: Logger | undefined
}

/** Where the service publishes its bundle signer's public key (uncompressed hex). */
export const SIGNER_PATH = '/.well-known/latchkey-kms-signer.json'

/** How far an activity's timestampMs may lie from the service's clock. */
export const TIMESTAMP_WINDOW_MS = { past: 10 * 60_000, future: 5 * 60_000 } as const

const CORS = {
  'access-control-allow-origin': '*',
  'access-control-allow-methods': 'POST, OPTIONS',
  'access-control-allow-headers': 'content-type, x-stamp, x-stamp-webauthn, x-stamp-attested, x-client-version, x-session, x-auth-proxy-config-id',
  'access-control-max-age': '86400',
}

/** Paths where a sub-organization's user may name the parent organization (Turnkey's "sub-organization look-up"). */
const SUB_ORGANIZATION_LOOKUPS = new Set(['/public/v1/query/whoami', '/public/v1/submit/stamp_login'])

const invalid = (message: string) => new KmsError(GrpcCode.invalidArgument, message)

/**
 * The key-management API as a Hono app: `POST /public/v1/query/{op}` and
 * `POST /public/v1/submit/{op}`, each stamped, answered with the Turnkey wire shapes.
 *
 * @example
 * const app = createKmsApp({ db: openDatabase(':memory:'), masterKey })
 * const response = await app.request('/public/v1/query/whoami', { method: 'POST', body, headers: { 'X-Stamp': stamp } })
 */
export function createKmsApp(options: KmsAppOptions) {
  const { db, masterKey } = options
  const now = options.now ?? Date.now
  const maxBodyBytes = options.maxBodyBytes ?? 256 * 1024
  const mailer = options.mailer ?? devInbox(db, now)
  const app = new Hono()

  app.options('*', () => new Response(null, { status: 204, headers: CORS }))

  // The key that signs export and import bundles, for apps and frames to pin.
  const signerPublicKey = Buffer.from(p256.getPublicKey(options.signerPrivateKey, false)).toString('hex')
  app.get(SIGNER_PATH, () => Response.json({ signerPublicKey }, { headers: CORS }))

  // The dev inbox, only when mail is not going out by SMTP.
  if (!options.mailer) {
    app.get('/dev/mailbox.json', () => Response.json(mailboxJson(db), { headers: CORS }))
    app.get('/dev/mailbox', () => new Response(mailboxPage(db), { headers: { 'content-type': 'text/html; charset=utf-8' } }))
  }

  app.onError((error) => {
    const known = error instanceof KmsError ? error : new KmsError(GrpcCode.internal, 'internal error')
    if (!(error instanceof KmsError)) {
      if (options.logger) options.logger.error({ err: error }, `unexpected error: ${error.message}`)
      else console.error(error)
    }
    return Response.json(known.toJSON(), { status: known.status, headers: CORS })
  })
  app.notFound(() => Response.json(new KmsError(GrpcCode.notFound, 'no such endpoint').toJSON(), { status: 404, headers: CORS }))

  /** The raw body, its parsed JSON and the caller its stamp proves. Nothing is read twice. */
  async function authenticate(request: Request): Promise<{ body: Record<string, unknown>; raw: Uint8Array; caller: Caller }> {
    const declared = Number(request.headers.get('content-length') ?? 0)
    if (declared > maxBodyBytes) throw new KmsError(GrpcCode.invalidArgument, `request body too large: at most ${maxBodyBytes} bytes`, [], 413)
    const raw = new Uint8Array(await request.arrayBuffer())
    if (raw.length > maxBodyBytes) throw new KmsError(GrpcCode.invalidArgument, `request body too large: at most ${maxBodyBytes} bytes`, [], 413)
    const apiKeyStamp = request.headers.get('x-stamp')
    const passkeyStamp = request.headers.get('x-stamp-webauthn')
    const readOnlySession = request.headers.get('x-session')
    if (!apiKeyStamp && !passkeyStamp && !readOnlySession) throw new KmsError(GrpcCode.unauthenticated, 'missing stamp: send X-Stamp or X-Stamp-Webauthn')
    // The stamp is checked before the body is parsed: nothing unauthenticated is interpreted.
    let signer: { userId: string; organizationId: string; expiresAt: number | null; publicKey: string; authenticatorId?: string; counter?: number }
    if (!apiKeyStamp && !passkeyStamp) {
      // A read-only session token (create_read_only_session), replayed in X-Session: queries only.
      if (!new URL(request.url).pathname.startsWith('/public/v1/query/'))
        throw new KmsError(GrpcCode.permissionDenied, 'a read-only session (X-Session) may only query; stamp activities with X-Stamp or X-Stamp-Webauthn')
      const claims = readSessionJwt(readOnlySession!, signerPublicKey)
      if (
        claims?.['session_type'] !== 'SESSION_TYPE_READ_ONLY' ||
        typeof claims['user_id'] !== 'string' ||
        typeof claims['organization_id'] !== 'string' ||
        typeof claims['exp'] !== 'number'
      )
        throw new KmsError(GrpcCode.unauthenticated, 'invalid read-only session: not a session token this service issued')
      if (!db.user(claims['user_id'], claims['organization_id']))
        throw new KmsError(GrpcCode.unauthenticated, 'invalid read-only session: its user no longer exists')
      signer = { userId: claims['user_id'], organizationId: claims['organization_id'], expiresAt: claims['exp'] * 1000, publicKey: 'read-only session' }
    } else if (apiKeyStamp) {
      const { publicKey } = verifyApiKeyStamp(apiKeyStamp, raw)
      const apiKey = db.apiKeyByPublicKey(publicKey)
      if (!apiKey) throw new KmsError(GrpcCode.unauthenticated, UNKNOWN_KEY_MESSAGE)
      signer = { userId: apiKey.user_id, organizationId: apiKey.organization_id, expiresAt: apiKey.expires_at, publicKey }
    } else {
      const stamp = parseWebauthnStamp(passkeyStamp!)
      const authenticator = db.authenticatorByCredential(stamp.credentialId)
      if (!authenticator)
        throw new KmsError(GrpcCode.unauthenticated, `could not find credential ${stamp.credentialId} in organization or its parent organization`)
      const counter = await verifyWebauthnStamp(stamp, raw, authenticator, options.webauthn ?? DEFAULT_WEBAUTHN)
      signer = {
        userId: authenticator.user_id,
        organizationId: authenticator.organization_id,
        expiresAt: null,
        publicKey: stamp.credentialId,
        authenticatorId: authenticator.id,
        counter,
      }
    }
    let body: unknown
    try {
      body = JSON.parse(new TextDecoder().decode(raw))
    } catch {
      throw invalid('the request body is not JSON')
    }
    if (typeof body !== 'object' || body === null || Array.isArray(body)) throw invalid('the request body must be a JSON object')
    const organizationId = (body as { organizationId?: unknown }).organizationId
    if (typeof organizationId !== 'string' || !organizationId) throw invalid('organizationId is required')
    // A parent organization's key may act in its sub-organizations. The other way round is a look-up:
    // a sub-organization's user who names the parent in whoami or stamp_login (a passkey sign-in that
    // does not yet know its sub-organization) is answered in their own sub-organization.
    let organization = db.organization(organizationId)
    if (organization && signer.organizationId !== organization.id && SUB_ORGANIZATION_LOOKUPS.has(new URL(request.url).pathname)) {
      const home = db.organization(signer.organizationId)
      if (home?.parent_id === organization.id) organization = home
    }
    if (!organization || (signer.organizationId !== organization.id && signer.organizationId !== organization.parent_id))
      throw new KmsError(GrpcCode.unauthenticated, UNKNOWN_KEY_MESSAGE)
    if (signer.expiresAt !== null && signer.expiresAt <= now())
      throw new KmsError(GrpcCode.unauthenticated, signer.publicKey === 'read-only session' ? 'read-only session expired' : expiredKeyMessage(signer.publicKey))
    if (signer.authenticatorId) db.setAuthenticatorCounter(signer.authenticatorId, signer.counter!)
    return {
      body: body as Record<string, unknown>,
      raw,
      caller: { userId: signer.userId, homeOrganizationId: signer.organizationId, organizationId: organization.id, credential: signer.publicKey },
    }
  }

  /**
   * approve_activity and reject_activity: a root user's vote on an activity waiting for consensus.
   * Enough approvals run it as its submitter; enough rejections (so approvals can no longer reach
   * the threshold) reject it. The answer is the target activity, as the clients expect. Registered
   * before the general route, which would take these paths otherwise.
   */
  for (const [op, type, selection] of [
    ['approve_activity', 'ACTIVITY_TYPE_APPROVE_ACTIVITY', 'VOTE_SELECTION_APPROVED'],
    ['reject_activity', 'ACTIVITY_TYPE_REJECT_ACTIVITY', 'VOTE_SELECTION_REJECTED'],
  ] as const)
    app.post(`/public/v1/submit/${op}`, async (c) => {
      const { body, caller } = await authenticate(c.req.raw)
      if (body['type'] !== type) throw invalid(`unsupported activity type ${String(body['type'])} for /public/v1/submit/${op}`)
      const fingerprint = (body['parameters'] as { fingerprint?: unknown } | undefined)?.fingerprint
      if (typeof fingerprint !== 'string') throw invalid('parameters.fingerprint is required')
      const target = db.activityByFingerprint(fingerprint)
      if (!target || target.organization_id !== caller.organizationId)
        throw new KmsError(GrpcCode.notFound, `no activity with fingerprint ${fingerprint} in organization ${caller.organizationId}`)
      if (caller.homeOrganizationId !== caller.organizationId)
        throw new KmsError(GrpcCode.permissionDenied, 'only the organization’s own users vote on its activities')
      if (target.status !== 'ACTIVITY_STATUS_CONSENSUS_NEEDED')
        throw new KmsError(GrpcCode.failedPrecondition, `activity ${target.id} is ${target.status}, not waiting for consensus`)
      const roots = rootUserIds(db, caller.organizationId)
      if (!roots.includes(caller.userId)) throw new KmsError(GrpcCode.permissionDenied, 'only root users vote on activities that need the root quorum')
      if (db.votes(target.id).some((vote) => vote.user_id === caller.userId))
        throw new KmsError(GrpcCode.alreadyExists, 'you have already voted on this activity')
      const at = now()
      db.insertVote({ id: randomUUID(), activity_id: target.id, user_id: caller.userId, selection, created_at: at })
      // Only root users' votes count, against the number of root users.
      const votes = db.votes(target.id).filter((vote) => roots.includes(vote.user_id))
      const threshold = db.organization(caller.organizationId)!.root_quorum_threshold
      const approvals = votes.filter((vote) => vote.selection === 'VOTE_SELECTION_APPROVED').length
      const rejections = votes.length - approvals
      const voters = roots.length
      if (approvals >= threshold) {
        const kind = ACTIVITIES[target.type]!
        const intent = JSON.parse(target.intent) as Record<string, unknown>
        const submitter: Caller = { userId: target.submitted_by!, homeOrganizationId: target.submitted_from!, organizationId: target.organization_id }
        try {
          const result = await kind.run(intent[kind.intentKey], activityContext(submitter))
          db.settleActivity(target.id, 'ACTIVITY_STATUS_COMPLETED', JSON.stringify({ [kind.resultKey]: result }), null, now())
        } catch (error) {
          // It was accepted when submitted; what fails now is reported on the activity itself.
          const failure = error instanceof KmsError ? error.toJSON() : { code: GrpcCode.internal, message: 'internal error', details: [] }
          db.settleActivity(target.id, 'ACTIVITY_STATUS_FAILED', null, JSON.stringify(failure), now())
        }
      } else if (voters - rejections < threshold) db.settleActivity(target.id, 'ACTIVITY_STATUS_REJECTED', null, null, at)
      return c.json({ activity: envelope(db.activity(target.id, caller.organizationId)!) }, 200, CORS)
    })

  app.post('/public/v1/submit/:op', async (c) => {
    const { body, raw, caller } = await authenticate(c.req.raw)
    const op = c.req.param('op')
    const type = body['type']
    const kind = typeof type === 'string' ? ACTIVITIES[type] : undefined
    if (!kind || kind.op !== op) throw invalid(`unsupported activity type ${String(type)} for /public/v1/submit/${op}`)
    const time = Number(body['timestampMs'])
    if (typeof body['timestampMs'] !== 'string' || !Number.isSafeInteger(time)) throw invalid('timestampMs must be milliseconds since the epoch, as a string')
    if (time < now() - TIMESTAMP_WINDOW_MS.past || time > now() + TIMESTAMP_WINDOW_MS.future)
      throw invalid(
        `timestampMs is outside the accepted window (${TIMESTAMP_WINDOW_MS.past / 60_000} minutes back, ${TIMESTAMP_WINDOW_MS.future / 60_000} ahead)`,
      )

    // The same body bytes name the same activity: a resubmission returns it, it does not run twice.
    const fingerprint = `sha256:${createHash('sha256').update(raw).digest('hex')}`
    const existing = db.activityByFingerprint(fingerprint)
    if (existing) return c.json({ activity: envelope(existing) }, 200, CORS)

    const at = now()
    const row: ActivityRow = {
      id: randomUUID(),
      organization_id: caller.organizationId,
      fingerprint,
      type: type as string,
      status: 'ACTIVITY_STATUS_COMPLETED',
      intent: JSON.stringify({ [kind.intentKey]: body['parameters'] }),
      result: null,
      failure: null,
      created_at: at,
      updated_at: at,
      submitted_by: caller.userId,
      submitted_from: caller.homeOrganizationId,
    }
    // Root quorum: in an organization that needs more than one approval, its own users' activities
    // wait for the others (the parent organization's key, acting for the app, is not held to it).
    const organization = db.organization(caller.organizationId)!
    if (organization.root_quorum_threshold > 1 && caller.homeOrganizationId === caller.organizationId) {
      db.transaction(() => {
        db.insertActivity({ ...row, status: 'ACTIVITY_STATUS_CONSENSUS_NEEDED' })
        db.insertVote({ id: randomUUID(), activity_id: row.id, user_id: caller.userId, selection: 'VOTE_SELECTION_APPROVED', created_at: at })
      })
      return c.json({ activity: envelope(db.activity(row.id, caller.organizationId)!) }, 200, CORS)
    }
    const result = await kind.run(body['parameters'], activityContext(caller))
    const stored = { ...row, result: JSON.stringify({ [kind.resultKey]: result }) }
    db.insertActivity(stored)
    // Answered from the row just stored, not read back and parsed again.
    return c.json({ activity: activityView(stored, { intent: { [kind.intentKey]: body['parameters'] }, result: { [kind.resultKey]: result } }) }, 200, CORS)
  })

  function activityContext(caller: Caller): ActivityContext {
    return { db, webauthn: options.webauthn ?? DEFAULT_WEBAUTHN, mailer, masterKey, signerPrivateKey: options.signerPrivateKey, now, caller }
  }

  app.post('/public/v1/query/:op', async (c) => {
    const { body, caller } = await authenticate(c.req.raw)
    const query = QUERIES[c.req.param('op')]
    if (!query) throw new KmsError(GrpcCode.notFound, `unknown query ${c.req.param('op')}`)
    return c.json(query(body, caller), 200, CORS)
  })

  const QUERIES = createQueries({ db, envelope, signerPrivateKey: options.signerPrivateKey })

  const voter = (userId: string, organizationId: string) => {
    const user = db.user(userId, organizationId)
    return user && { user: userView(db, user) }
  }

  /** The `v1Activity` shape the clients read. */
  function envelope(row: ActivityRow) {
    return activityView(row)
  }

  /** `envelope`; for an activity stored this moment, `fresh` holds its intent and result as stored. */
  function activityView(row: ActivityRow, fresh?: { intent: unknown; result: unknown }) {
    const waiting = row.status === 'ACTIVITY_STATUS_CONSENSUS_NEEDED'
    return {
      id: row.id,
      organizationId: row.organization_id,
      status: row.status,
      type: row.type,
      intent: fresh ? fresh.intent : (JSON.parse(row.intent) as unknown),
      result: fresh ? fresh.result : row.result ? (JSON.parse(row.result) as unknown) : {},
      // An activity stored this moment (`fresh`: its intent and result as stored) has no votes yet.
      votes: (fresh ? [] : db.votes(row.id)).map((vote) => ({
        id: vote.id,
        userId: vote.user_id,
        // A voter deleted since is left out.
        ...(voter(vote.user_id, row.organization_id) ?? {}),
        activityId: row.id,
        selection: vote.selection,
        message: '',
        publicKey: '',
        signature: '',
        scheme: '',
        createdAt: timestamp(vote.created_at),
      })),
      fingerprint: row.fingerprint,
      canApprove: waiting,
      canReject: waiting,
      createdAt: timestamp(row.created_at),
      updatedAt: timestamp(row.updated_at),
      ...(row.failure ? { failure: JSON.parse(row.failure) as unknown } : {}),
    }
  }

  return app
}
