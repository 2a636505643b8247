import { createRemoteJWKSet, customFetch, errors as joseErrors, jwtVerify } from 'jose'
import { GrpcCode, invalid, KmsError } from '../errors.js'

// OIDC tokens are believed only when one of the configured issuers signed them: the signature is
// checked with jose against the issuer's published keys (JWKS, found through its discovery
// document unless given), then the issuer, an audience configured for it, and the expiry, on the
// service's clock. Which issuers and audiences are trusted is configuration (`--oidc-issuer`):
// an app backend can forward a token, it cannot vouch for one.

/** An OpenID issuer whose ID tokens the service accepts, for these client ids (audiences). */
export type OidcIssuer = {
  /** Exactly as tokens name it in `iss`, e.g. `https://accounts.google.com`. */
  readonly issuer: string
  /** The app client ids tokens may be for (`aud`); at least one. */
  readonly audiences: readonly string[]
  /** Where its keys are. Default: `jwks_uri` of `{issuer}/.well-known/openid-configuration`. */
  readonly jwksUri?: string | undefined
}

/** The claims of an ID token this service uses, once verified. */
export type VerifiedOidcToken = {
  iss: string
  sub: string
  /** The token's audiences that are configured for its issuer. */
  aud: string[]
  exp: number
  nonce: string | undefined
}

/**
 * Checks ID tokens against the configured issuers. Their key sets are fetched once (or ahead, by
 * `warm`) and kept: a sign-in never waits for them again. A set older than five minutes is
 * fetched anew in the background, after the token in hand was checked with the kept one; a token
 * whose key id is unknown makes jose fetch the set at once (a rotated key).
 */
export type OidcVerifier = {
  readonly issuers: readonly OidcIssuer[]
  verify(token: string, now: number): Promise<VerifiedOidcToken>
  /** Fetches every issuer's keys ahead of the first token; a failure is left for that token to report. */
  warm(): Promise<void>
}

/** How old a kept key set may grow before a token's check fetches it anew in the background. */
const OIDC_KEYS_REFRESH_MS = 5 * 60_000

type KeySet = { readonly jwks: ReturnType<typeof createRemoteJWKSet>; loadedAt: number }

/** A remote key set jose never blocks on for age (only on an unknown key id): its age is ours to watch. */
function remoteKeySet(url: URL, fetcher: typeof fetch): KeySet {
  return { jwks: createRemoteJWKSet(url, { cacheMaxAge: Number.POSITIVE_INFINITY, [customFetch]: fetcher }), loadedAt: 0 }
}

/** Fetches the set anew in the background when it is older than OIDC_KEYS_REFRESH_MS; a failure keeps the old one. */
function refreshIfOld(keySet: KeySet, at: number): void {
  if (!keySet.loadedAt || at - keySet.loadedAt < OIDC_KEYS_REFRESH_MS || keySet.jwks.reloading) return
  keySet.jwks.reload().then(
    () => (keySet.loadedAt = Date.now()),
    () => undefined,
  )
}

const unavailable = (issuer: string, why: string) => new KmsError(GrpcCode.unavailable, `the keys of the OIDC issuer ${issuer} could not be fetched: ${why}`)

/**
 * The verifier of ID tokens from `issuers`. With none configured, every token is refused.
 *
 * @example
 * const oidc = createOidcVerifier([{ issuer: 'https://accounts.google.com', audiences: ['1234.apps.googleusercontent.com'] }])
 * const { sub } = await oidc.verify(idToken, Date.now())
 */
export function createOidcVerifier(issuers: readonly OidcIssuer[], fetcher: typeof fetch = fetch): OidcVerifier {
  const byIssuer = new Map(issuers.map((entry) => [entry.issuer, entry]))
  const keySets = new Map<string, Promise<KeySet>>()

  function keySetOf(entry: OidcIssuer) {
    let found = keySets.get(entry.issuer)
    if (!found) {
      found = (async () => {
        if (entry.jwksUri) return remoteKeySet(new URL(entry.jwksUri), fetcher)
        const discovery = `${entry.issuer.replace(/\/+$/, '')}/.well-known/openid-configuration`
        let document: { jwks_uri?: unknown }
        try {
          const response = await fetcher(discovery)
          if (!response.ok) throw new Error(`${discovery} answered ${response.status}`)
          document = (await response.json()) as { jwks_uri?: unknown }
        } catch (error) {
          throw unavailable(entry.issuer, (error as Error).message)
        }
        if (typeof document.jwks_uri !== 'string') throw unavailable(entry.issuer, `${discovery} names no jwks_uri`)
        return remoteKeySet(new URL(document.jwks_uri), fetcher)
      })()
      // A failed discovery is tried again on the next token, not remembered.
      found.catch(() => keySets.delete(entry.issuer))
      keySets.set(entry.issuer, found)
    }
    return found
  }

  /** The issuer's keys, fetched now when none are kept yet. */
  async function load(entry: OidcIssuer): Promise<KeySet> {
    const keySet = await keySetOf(entry)
    if (!keySet.loadedAt) {
      await keySet.jwks.reload()
      keySet.loadedAt = Date.now()
    }
    return keySet
  }

  return {
    issuers,
    async warm() {
      await Promise.all(issuers.map((entry) => load(entry).catch(() => undefined)))
    },
    async verify(token, now) {
      const claims = decodeUnverified(token)
      const entry = byIssuer.get(claims.iss)
      if (!entry)
        throw invalid(
          `the OIDC token's issuer ${claims.iss} is not trusted by this service${issuers.length ? ` (trusted: ${issuers.map((known) => known.issuer).join(', ')})` : ': no issuer is configured'}`,
        )
      let keySet: KeySet
      try {
        keySet = await load(entry)
      } catch (error) {
        throw refusal(error, claims, entry)
      }
      refreshIfOld(keySet, Date.now())
      try {
        const { payload } = await jwtVerify(token, keySet.jwks, {
          issuer: entry.issuer,
          audience: [...entry.audiences],
          currentDate: new Date(now),
          requiredClaims: ['sub', 'exp'],
        })
        const audiences = typeof payload.aud === 'string' ? [payload.aud] : (payload.aud ?? [])
        return {
          iss: entry.issuer,
          sub: payload.sub!,
          aud: audiences.filter((audience) => entry.audiences.includes(audience)),
          exp: payload.exp!,
          nonce: typeof payload['nonce'] === 'string' ? payload['nonce'] : undefined,
        }
      } catch (error) {
        throw refusal(error, claims, entry)
      }
    },
  }
}

/** jose's reasons, said as this service's errors: a bad token is the caller's (3), an issuer that cannot be reached is not (14). */
function refusal(error: unknown, claims: { exp: unknown; aud: unknown }, entry: OidcIssuer): Error {
  if (error instanceof joseErrors.JWTExpired)
    return invalid(`the OIDC token expired at ${typeof claims.exp === 'number' ? new Date(claims.exp * 1000).toISOString() : 'an unknown time'}`)
  if (error instanceof joseErrors.JWTClaimValidationFailed && error.claim === 'aud')
    return invalid(
      `the OIDC token is for ${JSON.stringify(claims.aud)}, not for a client of ${entry.issuer} this service trusts (${entry.audiences.join(', ')})`,
    )
  if (error instanceof joseErrors.JWSSignatureVerificationFailed || error instanceof joseErrors.JWKSNoMatchingKey)
    return invalid(`the OIDC token is not signed by ${entry.issuer}: ${error.message}`)
  if (error instanceof joseErrors.JWKSTimeout || error instanceof joseErrors.JWKSInvalid) return unavailable(entry.issuer, error.message)
  if (error instanceof joseErrors.JOSEError) return invalid(`the OIDC token is not valid: ${error.message}`)
  if (error instanceof TypeError || (error instanceof Error && /fetch/i.test(error.message))) return unavailable(entry.issuer, error.message)
  return error instanceof Error ? error : new Error(String(error))
}

/** The issuer a token names, read before its signature is checked (to know whose keys to check it with). */
function decodeUnverified(token: string): { iss: string; exp: unknown; aud: unknown } {
  const parts = token.split('.')
  if (parts.length !== 3 || parts.some((part) => !/^[A-Za-z0-9_-]+$/.test(part))) throw invalid('oidcToken is not a JWT: expected three base64url parts')
  let claims: { iss?: unknown; exp?: unknown; aud?: unknown }
  try {
    claims = JSON.parse(Buffer.from(parts[1]!, 'base64url').toString('utf8')) as typeof claims
  } catch {
    throw invalid('oidcToken is not a JWT: its claims must be JSON')
  }
  if (typeof claims !== 'object' || claims === null || typeof claims.iss !== 'string' || !claims.iss) throw invalid('oidcToken claims name no issuer (iss)')
  return { iss: claims.iss, exp: claims.exp, aud: claims.aud }
}
