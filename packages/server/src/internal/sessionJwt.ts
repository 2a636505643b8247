import { verifySessionJwtSignature } from '@turnkey/crypto'
import { z } from 'zod'
import { ServerError } from '../errors.js'

const claimsSchema = z.object({
  exp: z.number().int(),
  public_key: z.string(),
  session_type: z.string(),
  user_id: z.string().min(1),
  organization_id: z.string().min(1),
  /** stamp_login's: the type of the credential that stamped it (our kms says; Turnkey's notarizer does not). */
  credential_type: z.string().nullish(),
})

/** The credential type of a passkey, as the kms names it in `credential_type`. */
export const PASSKEY_CREDENTIAL = 'CREDENTIAL_TYPE_WEBAUTHN_AUTHENTICATOR'

/** The claims of a session JWT (stamp_login, otp_login): `exp` in unix seconds. */
export type SessionClaims = z.infer<typeof claimsSchema>

/**
 * The claims of a read-write session JWT signed by `signerPublicKey` (the kms's signer, a list of
 * them while it rotates, or Turnkey's notarizer when undefined) that has not expired; otherwise a
 * 401 saying why.
 */
export async function verifySessionJwt(jwt: string, signerPublicKey: string | readonly string[] | undefined, now: number): Promise<SessionClaims> {
  let signed = false
  for (const key of typeof signerPublicKey === 'string' || signerPublicKey === undefined ? [signerPublicKey] : signerPublicKey) {
    try {
      signed = await verifySessionJwtSignature(jwt, key)
    } catch {
      signed = false
    }
    if (signed) break
  }
  if (!signed) throw new ServerError(401, 'invalid_session', 'The session token is not signed by the key-management service')
  let claims: SessionClaims
  try {
    claims = claimsSchema.parse(JSON.parse(Buffer.from(jwt.split('.')[1]!, 'base64url').toString('utf8')))
  } catch {
    throw new ServerError(401, 'invalid_session', 'The session token does not carry session claims')
  }
  if (claims.exp * 1000 <= now) throw new ServerError(401, 'session_expired', 'The session token has expired; sign in again')
  if (claims.session_type !== 'SESSION_TYPE_READ_WRITE')
    throw new ServerError(401, 'invalid_session', 'The session token is read-only; sign in with a read-write session')
  return claims
}
