import { ECDH } from 'node:crypto'
import { z } from 'zod'

/** Whether `hex` decodes to a point on P-256 (OpenSSL checks the curve equation). */
function isP256Point(hex: string) {
  try {
    ECDH.convertKey(hex, 'prime256v1', 'hex', 'hex', 'compressed')
    return true
  } catch {
    return false
  }
}

export const email = z.email().max(254)

/**
 * The language of the kms's mails: the body's `locale` (a BCP 47 tag: the app's UI language), else
 * the request's Accept-Language, as the kms's Latchkey extension field `locale` takes it. The kms
 * writes in 16 languages and falls back to English.
 */
export const locale = z.string().max(256).optional()
export const mailLocale = (given: string | undefined, acceptLanguage: string | undefined) => {
  const chosen = given ?? acceptLanguage?.slice(0, 256)
  return chosen ? { locale: chosen } : {}
}

/** A key the browser holds and stamps with: what the kms registers as an API key. */
export const compressedP256Key = z
  .string()
  .regex(/^0[23][0-9a-f]{64}$/, 'must be a compressed P-256 public key in lowercase hex')
  .refine(isP256Point, 'is not a point on P-256')

/** A key something is encrypted to (a frame's embedded key): compressed or uncompressed. */
export const p256PublicKey = z
  .string()
  .regex(/^(?:0[23][0-9a-f]{64}|04[0-9a-f]{128})$/, 'must be a P-256 public key in hex')
  .refine(isP256Point, 'is not a point on P-256')

/** How long a session key the kms registers works. */
export const SESSION_KEY_SECONDS = { default: 900, min: 60, max: 86_400 } as const
export const sessionKeySeconds = z
  .number()
  .int('must be a whole number of seconds')
  .min(SESSION_KEY_SECONDS.min, `must be at least ${SESSION_KEY_SECONDS.min} seconds`)
  .max(SESSION_KEY_SECONDS.max, `must be at most ${SESSION_KEY_SECONDS.max} seconds`)

const base64url = (maxLength: number) =>
  z
    .string()
    .min(1)
    .max(maxLength)
    .regex(/^[A-Za-z0-9_-]+$/, 'must be base64url')

/** A WebAuthn registration as @turnkey/http's getWebAuthnAttestation and sdk-browser send it. */
export const attestation = z.object({
  credentialId: base64url(1366),
  clientDataJson: base64url(8192),
  attestationObject: base64url(16_384),
  transports: z
    .array(
      z.enum([
        'AUTHENTICATOR_TRANSPORT_BLE',
        'AUTHENTICATOR_TRANSPORT_INTERNAL',
        'AUTHENTICATOR_TRANSPORT_NFC',
        'AUTHENTICATOR_TRANSPORT_USB',
        'AUTHENTICATOR_TRANSPORT_HYBRID',
      ]),
    )
    .max(5),
})

/** The registration challenge: 32 random bytes (SPEC §9), base64url without padding. */
export const challenge = z.string().regex(/^[A-Za-z0-9_-]{43}$/, 'must be the base64url of 32 random bytes')
