import { createHash, randomBytes } from 'node:crypto'
import { calculateJwkThumbprint, exportJWK, generateKeyPair, importJWK, importPKCS8, type JWK, SignJWT } from 'jose'
import type { SessionRow } from '../store.js'

/** Access JWTs last five minutes unless configured: short enough that a signed-out session's token dies soon. */
export const ACCESS_TOKEN_SECONDS = { default: 300, min: 60, max: 3600 } as const

/** The key that signs session JWTs: its private key, its public JWK as published, and its key id. */
export type SessionJwtKey = { privateKey: CryptoKey; publicJwk: JWK & { kid: string; alg: 'ES256'; use: 'sig' } }

/**
 * The keys a session JWT key setting lists, each as its own text: PKCS#8 PEM blocks one after
 * another, a JSON array of private JWKs, a JWK Set (`{"keys": [...]}`) or one private JWK. The
 * first signs; the others are only published, so tokens they signed keep verifying while a
 * rotation overlaps (Keycloak's passive keys, Supabase's standby key).
 *
 * @example
 * sessionJwtKeyTexts(`${newPem}\n${oldPem}`) // [newPem, oldPem]
 */
export function sessionJwtKeyTexts(text: string): string[] {
  const trimmed = text.trim()
  if (trimmed.startsWith('[') || trimmed.startsWith('{')) {
    const parsed = JSON.parse(trimmed) as unknown
    const list = Array.isArray(parsed)
      ? parsed
      : typeof parsed === 'object' && parsed !== null && 'keys' in parsed
        ? (parsed as { keys: unknown }).keys
        : [parsed]
    if (!Array.isArray(list)) throw new Error('the session JWT key set must list its keys')
    return list.map((jwk) => JSON.stringify(jwk))
  }
  return trimmed.match(/-----BEGIN [A-Z ]+-----[\s\S]*?-----END [A-Z ]+-----/g) ?? [trimmed]
}

/**
 * Reads one P-256 private key given as PKCS#8 PEM or as a private JWK (JSON); without one,
 * generates a key for this process (development: tokens die with it, and two instances would not
 * share it). The key id is the JWK thumbprint (RFC 7638), so the same key always has the same `kid`.
 */
export async function loadSessionJwtKey(text: string | undefined): Promise<SessionJwtKey> {
  let privateKey: CryptoKey
  if (text === undefined) privateKey = (await generateKeyPair('ES256', { extractable: true })).privateKey
  else if (text.trim().startsWith('{')) {
    const jwk = JSON.parse(text) as JWK
    if (jwk.kty !== 'EC' || jwk.crv !== 'P-256' || typeof jwk.d !== 'string') throw new Error('the session JWT key must be a P-256 private key (EC JWK with d)')
    privateKey = (await importJWK({ ...jwk, alg: 'ES256' }, 'ES256', { extractable: true })) as CryptoKey
  } else privateKey = await importPKCS8(text.trim(), 'ES256', { extractable: true })
  const { kty, crv, x, y } = await exportJWK(privateKey)
  if (kty !== 'EC' || crv !== 'P-256' || x === undefined || y === undefined) throw new Error('the session JWT key must be a P-256 key')
  const publicJwk = { kty, crv, x, y }
  return { privateKey, publicJwk: { ...publicJwk, kid: await calculateJwkThumbprint(publicJwk), alg: 'ES256', use: 'sig' } }
}

/**
 * Every key a session JWT key setting lists (`sessionJwtKeyTexts`), the signing key first; one
 * generated key without a setting. A key listed twice is refused: its `kid` would be published twice.
 */
export async function loadSessionJwtKeys(text: string | undefined): Promise<readonly [SessionJwtKey, ...SessionJwtKey[]]> {
  if (text === undefined) return [await loadSessionJwtKey(undefined)]
  const keys = await Promise.all(sessionJwtKeyTexts(text).map(loadSessionJwtKey))
  const [first, ...rest] = keys
  if (!first) throw new Error('the session JWT key setting lists no key')
  if (new Set(keys.map((key) => key.publicJwk.kid)).size !== keys.length) throw new Error('the session JWT key setting lists a key twice')
  return [first, ...rest]
}

/** A refresh token: 256 random bits, and the digest it is stored under. */
export function newRefreshToken() {
  const token = randomBytes(32).toString('base64url')
  return { token, digest: refreshTokenDigest(token) }
}

/** The SHA-256 of a refresh token: the store never holds a usable token. */
export const refreshTokenDigest = (token: string) => createHash('sha256').update(token).digest('base64url')

/**
 * The claims other services read: `sub` the signed-in address (every kind of session has one),
 * `sid` a digest of the session id (never the cookie itself), the account's ids and email when
 * the backend created the wallet, and the SIWE chain and wallet kind.
 */
export function sessionClaims(session: SessionRow) {
  return {
    sid: createHash('sha256').update(session.id).digest('base64url').slice(0, 22),
    kind: session.kind,
    ...(session.organization_id !== null ? { org: session.organization_id } : {}),
    ...(session.user_id !== null ? { uid: session.user_id } : {}),
    ...(session.email !== null ? { email: session.email } : {}),
    ...(session.chain_id !== null ? { chain_id: session.chain_id } : {}),
    ...(session.wallet_kind !== null ? { wallet_kind: session.wallet_kind } : {}),
  }
}

/**
 * `iss` and `aud` of access JWTs when not configured. The issuer is the dev stack's backend (the
 * CLI and `createAppServer` default to the URL they listen on; production must name its public
 * URL); the audience names what every Latchkey access JWT is for: the app's own services.
 */
export const SESSION_JWT_DEFAULTS = { issuer: 'http://localhost:8787', audience: 'latchkey-app' } as const

/**
 * An ES256 access JWT for `session`, valid `seconds` from `at` (never past the session's end).
 *
 * @example
 * const { token, expiresAt } = await signAccessToken(key, session, { issuer: 'https://api.example', audience: 'latchkey-app', seconds: 300, at: Date.now() })
 */
export async function signAccessToken(
  key: SessionJwtKey,
  session: SessionRow,
  options: { issuer: string; audience: string; seconds: number; at: number },
): Promise<{ token: string; expiresAt: number }> {
  const issuedAt = Math.floor(options.at / 1000)
  const expiresAt = Math.min(issuedAt + options.seconds, Math.floor(session.expires_at / 1000))
  const jwt = new SignJWT(sessionClaims(session))
    .setProtectedHeader({ alg: 'ES256', kid: key.publicJwk.kid, typ: 'at+jwt' })
    .setIssuer(options.issuer)
    .setAudience(options.audience)
    .setSubject(session.address)
    .setIssuedAt(issuedAt)
    .setExpirationTime(expiresAt)
    .setJti(randomBytes(16).toString('base64url'))
  return { token: await jwt.sign(key.privateKey), expiresAt: expiresAt * 1000 }
}
