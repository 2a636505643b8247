import { p256 } from '@noble/curves/p256'
import { hkdf } from '@noble/hashes/hkdf'
import { sha256 } from '@noble/hashes/sha2'
import { z } from 'zod'
import { hpkeOpen } from '../bundles.js'
import type { Caller } from '../context.js'
import { invalid, permissionDenied } from '../errors.js'

// The key a consent frame seals a typed second-factor code to (issue 28): the page that relays
// the frame's stamped verify_mfa_factor body reads the body, so the code (or a recovery code,
// which unlocks every factor) travels sealed, as verify_otp's email codes do. Every instance
// derives the same key from the signer key it already shares (HKDF-SHA256, its own label: the
// signing key itself never decrypts), so no state is kept; the frames' pages carry its public key
// (`latchkey-mfa-code-key`) as they carry the signer's.

const LABEL = new TextEncoder().encode('latchkey mfa code key v1')

/** The P-256 private key (hex) that sealed second-factor codes are opened with, derived from `signerPrivateKey`. */
export function mfaCodePrivateKey(signerPrivateKey: string): string {
  for (let counter = 0; ; counter++) {
    const bytes = hkdf(sha256, Buffer.from(signerPrivateKey, 'hex'), LABEL, new Uint8Array([counter]), 32)
    if (p256.utils.isValidPrivateKey(bytes)) return Buffer.from(bytes).toString('hex')
  }
}

/** Its public key, uncompressed hex: what the consent page's meta tag names. */
export const mfaCodePublicKey = (signerPrivateKey: string) => Buffer.from(p256.getPublicKey(mfaCodePrivateKey(signerPrivateKey), false)).toString('hex')

const sealedCode = z.union([
  z.strictObject({ code: z.string().regex(/^\d{6}$/), factorId: z.string().min(1), organizationId: z.string(), publicKey: z.string() }),
  z.strictObject({ recoveryCode: z.string().min(1).max(32), organizationId: z.string(), publicKey: z.string() }),
])
export type OpenedCode = { code: string; factorId: string } | { recoveryCode: string }

/**
 * The code inside `encryptedCodeBundle` (`{encappedPublic, ciphertext}`, hex, HPKE to the code
 * key, as an encryptedOtpBundle): `{code, factorId}` or `{recoveryCode}`, each with the
 * organization and the public key of the session key that stamps the request. A bundle moved to
 * another request, organization, factor or key is refused.
 */
export async function openCodeBundle(bundle: string, context: { signerPrivateKey: string; caller: Caller }, factorId: string | undefined): Promise<OpenedCode> {
  let envelope: { encappedPublic?: unknown; ciphertext?: unknown }
  try {
    envelope = JSON.parse(bundle)
  } catch {
    throw invalid('encryptedCodeBundle is not JSON')
  }
  if (typeof envelope?.encappedPublic !== 'string' || typeof envelope.ciphertext !== 'string')
    throw invalid('encryptedCodeBundle must hold encappedPublic and ciphertext')
  const plaintext = await hpkeOpen(
    mfaCodePrivateKey(context.signerPrivateKey),
    Buffer.from(envelope.encappedPublic, 'hex'),
    Buffer.from(envelope.ciphertext, 'hex'),
  ).catch(() => {
    throw invalid('encryptedCodeBundle does not open with the kms’s code key (latchkey-mfa-code-key): reload the frame')
  })
  let inner: unknown
  try {
    inner = JSON.parse(new TextDecoder().decode(plaintext))
  } catch {
    inner = undefined
  }
  const parsed = sealedCode.safeParse(inner)
  if (!parsed.success) throw invalid('encryptedCodeBundle must hold {code, factorId} or {recoveryCode}, with organizationId and publicKey')
  const opened = parsed.data
  if (opened.organizationId !== context.caller.organizationId || opened.publicKey !== context.caller.credential)
    throw permissionDenied('encryptedCodeBundle was sealed for another organization or session key than the one that stamps this request')
  if ('code' in opened) {
    if (opened.factorId !== factorId) throw permissionDenied('encryptedCodeBundle was sealed for another factor')
    return { code: opened.code, factorId: opened.factorId }
  }
  return { recoveryCode: opened.recoveryCode }
}
