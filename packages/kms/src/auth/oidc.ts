import { createRemoteJWKSet, errors as joseErrors, jwtVerify } from 'jose'
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

/** Checks ID tokens against the configured issuers; their key sets are fetched once and kept (jose refreshes them on an unknown key id). */
export type OidcVerifier = {
  readonly issuers: readonly OidcIssuer[]
  verify(token: string, now: number): Promise<VerifiedOidcToken>
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
  const keySets = new Map<string, Promise<ReturnType<typeof createRemoteJWKSet>>>()

  function keySetOf(entry: OidcIssuer) {
    let found = keySets.get(entry.issuer)
    if (!found) {
      found = (async () => {
        if (entry.jwksUri) return createRemoteJWKSet(new URL(entry.jwksUri))
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
        return createRemoteJWKSet(new URL(document.jwks_uri))
      })()
      // A failed discovery is tried again on the next token, not remembered.
      found.catch(() => keySets.delete(entry.issuer))
      keySets.set(entry.issuer, found)
    }
    return found
  }

  return {
    issuers,
    async verify(token, now) {
      const claims = decodeUnverified(token)
      const entry = byIssuer.get(claims.iss)
      if (!entry)
        throw invalid(
          `the OIDC token's issuer ${claims.iss} is not trusted by this service${issuers.length ? ` (trusted: ${issuers.map((known) => known.issuer).join(', ')})` : ': no issuer is configured'}`,
        )
      const keySet = await keySetOf(entry)
      try {
        const { payload } = await jwtVerify(token, keySet, {
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
