import { createHash, randomUUID } from 'node:crypto'
import { p256 } from '@noble/curves/p256'
import { credentialBundle } from './bundles.js'
import type { ActivityContext, Caller } from './context.js'
import type { Db } from './db.js'
import { alreadyExists, invalid } from './errors.js'
import { p256Sign, p256Verify } from './p256.js'
import type { ApiKeyParams } from './params.js'
import { type AuthenticatorParams, toTransport, type verifyRegistration } from './webauthn.js'

// What activities register for users: API keys, passkeys, credentials handed over in bundles and
// session tokens.

/**
 * The credential type of a grant's API key (grants/): a Latchkey extension. Authentication lets such
 * a key reach sign_transaction only, and the activity route checks it against its grant.
 */
export const GRANT_CREDENTIAL_TYPE = 'CREDENTIAL_TYPE_LATCHKEY_GRANT_API_KEY_P256'

/** Session keys, login keys and OAuth credentials work this long unless asked otherwise. */
export const DEFAULT_SESSION_SECONDS = 900

/** The longest lifetime a credential may be given unless the kms is told otherwise (`maxCredentialSeconds`): a day. */
export const DEFAULT_MAX_CREDENTIAL_SECONDS = 86_400

/** The shortest `maxCredentialSeconds`: the default session, so that no default lifetime is over the cap. */
export const MIN_MAX_CREDENTIAL_SECONDS = DEFAULT_SESSION_SECONDS

/**
 * Refuses a credential lifetime over the kms's maximum (InvalidArgument, before anything is
 * written): a stolen session or key must not outlive it (security review H1).
 *
 * @example
 * refuseLongLifetime(context, input.expirationSeconds) // throws for '3153600000'
 */
export function refuseLongLifetime(context: Pick<ActivityContext, 'maxCredentialSeconds'>, expirationSeconds: string | undefined, field = 'expirationSeconds') {
  if (expirationSeconds !== undefined && Number(expirationSeconds) > context.maxCredentialSeconds)
    throw invalid(`invalid parameters: ${field}: must be at most ${context.maxCredentialSeconds} seconds, the longest lifetime this kms gives a credential`)
}

/**
 * Refuses API keys whose lifetimes break the rules (InvalidArgument, before anything is written):
 * each `expirationSeconds` within the maximum, and, where `expiryRequired` (a sub-organization's
 * users, made by anyone but its parent organization at create_sub_organization), one on every key,
 * so that no key there lives for ever.
 *
 * @example
 * refuseKeyLifetimes(context, apiKeys, 'apiKeys', inSubOrganization)
 */
export function refuseKeyLifetimes(
  context: Pick<ActivityContext, 'maxCredentialSeconds'>,
  keys: readonly { expirationSeconds?: string | undefined }[],
  field: string,
  expiryRequired: boolean,
) {
  keys.forEach((key, index) => {
    if (key.expirationSeconds === undefined && expiryRequired)
      throw invalid(`invalid parameters: ${field}.${index}.expirationSeconds: is required in a sub-organization, where no key may live for ever`)
    refuseLongLifetime(context, key.expirationSeconds, `${field}.${index}.expirationSeconds`)
  })
}

/**
 * Registers an API key for a user; refused when the public key is registered already.
 * `verifiedAt`: when the user last proved themselves on the way to it (policies/freshVerification.ts),
 * null unless given.
 *
 * @example
 * const apiKeyId = await insertApiKey(db, userId, organizationId, { apiKeyName: 'backend', publicKey }, now())
 */
export async function insertApiKey(
  db: Db,
  userId: string,
  organizationId: string,
  key: ApiKeyParams,
  now: number,
  { credentialType = 'CREDENTIAL_TYPE_API_KEY_P256', verifiedAt = null }: { credentialType?: string; verifiedAt?: number | null } = {},
): Promise<string> {
  if (await db.apiKeyByPublicKey(key.publicKey)) throw alreadyExists(`api key ${key.publicKey} is already registered`)
  const id = randomUUID()
  await db.insertApiKey({
    id,
    user_id: userId,
    organization_id: organizationId,
    name: key.apiKeyName,
    public_key: key.publicKey,
    curve: key.curveType ?? 'API_KEY_CURVE_P256',
    credential_type: credentialType,
    expires_at: key.expirationSeconds ? now + Number(key.expirationSeconds) * 1000 : null,
    created_at: now,
    verified_at: verifiedAt,
    created_by_api_key_id: null,
  })
  return id
}

/**
 * `invalidateExisting`: deletes the user's earlier keys of one credential type (Turnkey: "invalidate
 * all other previously generated Login API keys", OTP keys, OAuth keys), inside the activity's
 * transaction, before its new key is registered.
 *
 * @example
 * if (input.invalidateExisting) await invalidateKeys(db, userId, 'CREDENTIAL_TYPE_LOGIN')
 */
export async function invalidateKeys(db: Db, userId: string, credentialType: string) {
  for (const key of await db.apiKeysOfUser(userId)) if (key.credential_type === credentialType) await db.deleteApiKey(key.id)
}

/** Stores a passkey whose registration `verifyRegistration` accepted. */
export async function insertAuthenticator(
  db: Db,
  userId: string,
  organizationId: string,
  authenticator: AuthenticatorParams,
  passkey: Awaited<ReturnType<typeof verifyRegistration>>,
  at: number,
): Promise<string> {
  const id = randomUUID()
  await db.insertAuthenticator({
    id,
    user_id: userId,
    organization_id: organizationId,
    name: authenticator.authenticatorName,
    credential_id: passkey.credentialId,
    public_key: passkey.publicKey,
    counter: passkey.counter,
    transports: JSON.stringify(authenticator.attestation.transports.map(toTransport)),
    aaguid: passkey.aaguid,
    attestation_type: passkey.attestationType,
    created_at: at,
  })
  return id
}

/** A fresh P-256 key, sealed in a credential bundle for `target`; registered by `registerCredential`. */
export async function prepareCredential(target: string) {
  const key = p256.utils.randomPrivateKey()
  return { key, credentialBundle: await credentialBundle(target, key) }
}

/**
 * Registers a prepared credential's key for `userId`, with an expiry. Synchronous: it may join a
 * transaction. `verifiedAt` (policies/freshVerification.ts): 'at creation' for a credential that is
 * itself the proof (an email code just redeemed), else the moment it inherits, or null.
 */
export async function registerCredential(
  context: ActivityContext,
  credential: { key: Uint8Array },
  parameters: {
    userId: string
    credentialType: string
    name: string | undefined
    expirationSeconds: string | undefined
    verifiedAt: number | null | 'at creation'
  },
): Promise<string> {
  const apiKeyId = randomUUID()
  const at = context.now()
  await context.db.insertApiKey({
    id: apiKeyId,
    user_id: parameters.userId,
    organization_id: context.caller.organizationId,
    name: parameters.name ?? `${parameters.credentialType.replace('CREDENTIAL_TYPE_', '').toLowerCase()} ${new Date(at).toISOString()}`,
    public_key: Buffer.from(p256.getPublicKey(credential.key, true)).toString('hex'),
    curve: 'API_KEY_CURVE_P256',
    credential_type: parameters.credentialType,
    expires_at: at + Number(parameters.expirationSeconds ?? DEFAULT_SESSION_SECONDS) * 1000,
    created_at: at,
    verified_at: parameters.verifiedAt === 'at creation' ? at : parameters.verifiedAt,
    created_by_api_key_id: null,
  })
  return apiKeyId
}

/**
 * A JWT signed ES256 over SHA-256(SHA-256(header.payload)), signature r‖s: the hosted notarizer's
 * scheme, which `@turnkey/crypto` `verifySessionJwtSignature` checks.
 */
export function sessionJwt(claims: Record<string, unknown>, privateKey: string): string {
  const encode = (value: object) => Buffer.from(JSON.stringify(value)).toString('base64url')
  const input = `${encode({ alg: 'ES256', typ: 'JWT' })}.${encode(claims)}`
  // OpenSSL hashes once more: the signature is over SHA-256 of the first digest.
  return `${input}.${p256Sign(privateKey, createHash('sha256').update(input).digest(), 'p1363').toString('base64url')}`
}

/**
 * The claims of a session JWT this service signed, or undefined when the token is malformed or
 * its signature is not ours. Expiry is the caller's to check.
 */
export function readSessionJwt(token: string, publicKey: Uint8Array | string): Record<string, unknown> | undefined {
  const parts = token.split('.')
  if (parts.length !== 3) return undefined
  const [header, claims, signature] = parts as [string, string, string]
  try {
    const bytes = Buffer.from(signature, 'base64url')
    if (bytes.length !== 64 || !p256Verify(publicKey, createHash('sha256').update(`${header}.${claims}`).digest(), bytes, 'p1363')) return undefined
    const parsed = JSON.parse(Buffer.from(claims, 'base64url').toString('utf8')) as unknown
    return typeof parsed === 'object' && parsed !== null && !Array.isArray(parsed) ? (parsed as Record<string, unknown>) : undefined
  } catch {
    return undefined
  }
}

/**
 * The `verified_at` a key registered for `userId` by the request's caller inherits: the caller's own
 * moment of verification (a passkey stamp's is now), unchanged, so that a chain of keys is never
 * fresher than the verification it began with; null for another user's key (the caller's proof is
 * not theirs) or when the caller has none.
 *
 * @example
 * await insertApiKey(db, userId, organizationId, key, now(), { verifiedAt: inheritedVerification(caller, userId) })
 */
export function inheritedVerification(caller: Caller, userId: string): number | null {
  return caller.userId === userId && caller.verifiedAt !== undefined ? caller.verifiedAt : null
}
