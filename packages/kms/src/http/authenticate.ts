import type { MiddlewareHandler } from 'hono'
import type { Caller } from '../context.js'
import { GRANT_CREDENTIAL_TYPE, readSessionJwt } from '../credentials.js'
import type { Approver, Db } from '../db.js'
import { expiredKeyMessage, GrpcCode, invalid, KmsError, permissionDenied, UNKNOWN_KEY_MESSAGE } from '../errors.js'
import { grantRefusal } from '../grants/rule.js'
import { verifiedAtOf } from '../policies/freshVerification.js'
import { checkApiKeyStamp } from '../stamp.js'
import type { ApiKeyRow, OrganizationRow } from '../storage/tables.js'
import { parseWebauthnStamp, verifyWebauthnStamp, type WebauthnConfig } from '../webauthn.js'
import type { StageProfile } from './stages.js'

/** What an authenticated request carries to its handler: the exact body bytes, the body parsed, and who stamped it. */
export type Authenticated = {
  raw: Uint8Array
  body: Record<string, unknown>
  caller: Caller
  /** The organization the request names, as read while authenticating it (not locked). */
  organization: OrganizationRow
  /** Its root users, when read in the same statement as `organization` (an API-key stamp): authorize() then reads them no more. */
  rootUserIds: readonly string[] | undefined
  /** The API key that stamped the request, as read while authenticating it (absent for other stamps): authorize() then reads it no more. */
  apiKey: ApiKeyRow | undefined
  /** The key's user as the policies' `approvers` list them, read in the same statement as `organization`: authorize() then reads it no more. */
  approver: Approver | undefined
  /** The stamp that signed the body (absent for a read-only session): a vote cast with this request lists it. */
  stamp: SignerStamp | undefined
}

/** The scheme a vote cast with a passkey lists: Turnkey documents no value for it, so this one is ours. */
export const WEBAUTHN_VOTE_SCHEME = 'SIGNATURE_SCHEME_TK_WEBAUTHN'

/** A stamp as a vote lists it: the public key, the signature and the scheme. */
export type SignerStamp = { publicKey: string; signature: string; scheme: string }

export type AuthenticateOptions = {
  db: Db
  /** The service's signer, and its next one while it rotates (uncompressed hex): read-only session tokens are signed with one of them. */
  signerPublicKeys: readonly string[]
  webauthn: WebauthnConfig
  now: () => number
  /** Laps the profile's clock (http/stages.ts), when one is given. */
  stages?: StageProfile | undefined
}

/** Paths where a sub-organization's user may name the parent organization (Turnkey's "sub-organization look-up"). */
const SUB_ORGANIZATION_LOOKUPS = new Set(['/public/v1/query/whoami', '/public/v1/submit/stamp_login'])

const READ_ONLY_SESSION = 'read-only session'

/** The one path a grant's key may reach. */
const GRANT_PATH = '/public/v1/submit/sign_transaction'

/** What an API-key stamp's statement read beside the key: the organization the body names, its root users and the key's user as an approver. */
type ReadWithKey = {
  organization?: { id: string; row: OrganizationRow | undefined; rootUserIds: readonly string[] | undefined; approver: Approver | undefined }
}

type Signer = {
  userId: string
  organizationId: string
  expiresAt: number | null
  publicKey: string
  stamp?: SignerStamp
  authenticatorId?: string
  counter?: number
  /** The API key's id and row, for an API-key stamp. */
  apiKeyId?: string
  apiKey?: ApiKeyRow
  /** Set when the key is a grant's (grants/): it may only submit sign_transaction. */
  grantKeyId?: string
  /** Unix ms: when the user last proved themselves (Caller's `verifiedAt`); null: never. */
  verifiedAt: number | null
}

/**
 * Authenticates a request by its stamp over the exact body bytes (`c.var.raw`, from bodyLimit):
 * an API-key stamp (`X-Stamp`), a passkey stamp (`X-Stamp-Webauthn`) or, for queries only, a
 * read-only session token (`X-Session`). The stamp is checked before the body is parsed, so
 * nothing unauthenticated is interpreted. Sets `c.var.body` and `c.var.caller`.
 *
 * @example
 * app.post('/public/v1/*', bodyLimit(256 * 1024), authenticate({ db, signerPublicKeys: [signerPublicKey], webauthn, now }), handler)
 */
export function authenticate(options: AuthenticateOptions): MiddlewareHandler<{ Variables: Authenticated }> {
  const { db, now, stages } = options

  async function signerOf(
    headers: { stamp: string | undefined; passkey: string | undefined; session: string | undefined },
    path: string,
    raw: Uint8Array,
    named: string | undefined,
    /** Filled with the organization `named` when it was read along with the key (per request). */
    read: ReadWithKey,
  ): Promise<Signer> {
    if (headers.stamp) {
      const { publicKey, signature, scheme } = checkApiKeyStamp(headers.stamp, raw)
      stages?.lap('stamp')
      // With the organization the body names, when it names one, in the same round trip.
      let apiKey: ApiKeyRow | undefined
      if (named === undefined) apiKey = await db.apiKeyByPublicKey(publicKey)
      else {
        const found = await db.apiKeyAndOrganization(publicKey, named)
        apiKey = found.apiKey
        read.organization = { id: named, row: found.organization, rootUserIds: found.rootUserIds, approver: found.approver }
      }
      if (!apiKey) throw new KmsError(GrpcCode.unauthenticated, UNKNOWN_KEY_MESSAGE)
      return {
        userId: apiKey.user_id,
        organizationId: apiKey.organization_id,
        expiresAt: apiKey.expires_at,
        publicKey,
        stamp: { publicKey, signature, scheme },
        verifiedAt: verifiedAtOf(apiKey),
        apiKeyId: apiKey.id,
        apiKey,
        ...(apiKey.credential_type === GRANT_CREDENTIAL_TYPE ? { grantKeyId: apiKey.id } : {}),
      }
    }
    if (headers.passkey) {
      const stamp = parseWebauthnStamp(headers.passkey)
      const authenticator = await db.authenticatorByCredential(stamp.credentialId)
      if (!authenticator)
        throw new KmsError(GrpcCode.unauthenticated, `could not find credential ${stamp.credentialId} in organization or its parent organization`)
      const counter = await verifyWebauthnStamp(stamp, raw, authenticator, options.webauthn)
      return {
        userId: authenticator.user_id,
        organizationId: authenticator.organization_id,
        expiresAt: null,
        publicKey: stamp.credentialId,
        // The assertion alone does not verify: the authenticator data and client data come with it.
        stamp: { publicKey: authenticator.public_key, signature: headers.passkey, scheme: WEBAUTHN_VOTE_SCHEME },
        authenticatorId: authenticator.id,
        counter,
        // The passkey was just used: the user is here now.
        verifiedAt: now(),
      }
    }
    if (headers.session) {
      // A read-only session token (create_read_only_session), replayed in X-Session: queries only.
      if (!path.startsWith('/public/v1/query/'))
        throw permissionDenied('a read-only session (X-Session) may only query; stamp activities with X-Stamp or X-Stamp-Webauthn')
      const session = headers.session
      const claims = options.signerPublicKeys.map((key) => readSessionJwt(session, key)).find((read) => read !== undefined)
      if (
        claims?.['session_type'] !== 'SESSION_TYPE_READ_ONLY' ||
        typeof claims['user_id'] !== 'string' ||
        typeof claims['organization_id'] !== 'string' ||
        typeof claims['exp'] !== 'number'
      )
        throw new KmsError(GrpcCode.unauthenticated, 'invalid read-only session: not a session token this service issued')
      if (!(await db.user(claims['user_id'], claims['organization_id'])))
        throw new KmsError(GrpcCode.unauthenticated, 'invalid read-only session: its user no longer exists')
      return {
        userId: claims['user_id'],
        organizationId: claims['organization_id'],
        expiresAt: claims['exp'] * 1000,
        publicKey: READ_ONLY_SESSION,
        verifiedAt: null,
      }
    }
    throw new KmsError(GrpcCode.unauthenticated, 'missing stamp: send X-Stamp or X-Stamp-Webauthn')
  }

  return async (c, next) => {
    const raw = (c.var as { raw?: Uint8Array }).raw
    if (!raw) throw new Error('authenticate runs after bodyLimit')
    const path = new URL(c.req.url).pathname
    // Parsed before the signer is known only to read the organization with its key; a body that
    // is not a JSON object with an organizationId is refused after the stamp, as before.
    let body: unknown
    try {
      body = JSON.parse(new TextDecoder().decode(raw))
    } catch {
      body = undefined
    }
    stages?.lap('http')
    const read: ReadWithKey = {}
    const named = typeof body === 'object' && body !== null && !Array.isArray(body) ? (body as { organizationId?: unknown }).organizationId : undefined
    const signer = await signerOf(
      { stamp: c.req.header('x-stamp'), passkey: c.req.header('x-stamp-webauthn'), session: c.req.header('x-session') },
      path,
      raw,
      typeof named === 'string' && named ? named : undefined,
      read,
    )
    if (body === undefined) throw invalid('the request body is not JSON')
    if (typeof body !== 'object' || body === null || Array.isArray(body)) throw invalid('the request body must be a JSON object')
    const organizationId = (body as { organizationId?: unknown }).organizationId
    if (typeof organizationId !== 'string' || !organizationId) throw invalid('organizationId is required')
    // A parent organization's key may act in its sub-organizations. The other way round is a look-up:
    // a sub-organization's user who names the parent in whoami or stamp_login (a passkey sign-in that
    // does not yet know its sub-organization) is answered in their own sub-organization.
    let organization = read.organization?.id === organizationId ? read.organization.row : await db.organization(organizationId)
    if (organization && signer.organizationId !== organization.id && SUB_ORGANIZATION_LOOKUPS.has(path)) {
      const home = await db.organization(signer.organizationId)
      if (home?.parent_id === organization.id) organization = home
    }
    if (!organization || (signer.organizationId !== organization.id && signer.organizationId !== organization.parent_id))
      throw new KmsError(GrpcCode.unauthenticated, UNKNOWN_KEY_MESSAGE)
    if (signer.expiresAt !== null && signer.expiresAt <= now())
      throw new KmsError(GrpcCode.unauthenticated, signer.publicKey === READ_ONLY_SESSION ? 'read-only session expired' : expiredKeyMessage(signer.publicKey))
    // A grant's key signs transactions within its grant and does nothing else: no messages, no
    // exports, no credentials, no reads (the activity route applies the grant itself).
    if (signer.grantKeyId && path !== GRANT_PATH)
      throw grantRefusal(GrpcCode.permissionDenied, 'GRANT_ACTIVITY_NOT_ALLOWED', `A grant's key signs transactions only; ${path} is refused`)
    if (signer.authenticatorId) await db.setAuthenticatorCounter(signer.authenticatorId, signer.counter!)
    c.set('body', body as Record<string, unknown>)
    c.set('organization', organization)
    // Only for the very row read with them (a sub-organization look-up answers in another).
    const readWithKey = organization === read.organization?.row ? read.organization : undefined
    c.set('rootUserIds', readWithKey?.rootUserIds)
    c.set('approver', readWithKey?.approver)
    c.set('stamp', signer.stamp)
    c.set('apiKey', signer.apiKey)
    c.set('caller', {
      userId: signer.userId,
      homeOrganizationId: signer.organizationId,
      organizationId: organization.id,
      credential: signer.publicKey,
      apiKeyId: signer.apiKeyId,
      grantKeyId: signer.grantKeyId,
      verifiedAt: signer.verifiedAt ?? undefined,
    })
    stages?.lap('authentication')
    await next()
  }
}
