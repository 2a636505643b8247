import { bytesToNumberBE } from '@noble/curves/abstract/utils'
import { DER } from '@noble/curves/abstract/weierstrass'
import type { CollectedOtp, CollectOtpValue, MfaCarried, MfaSubmit, SecondFactorDone, SecondFactorRequest } from './consentFrame.js'

/** What `@turnkey/http` asks of a stamper. */
export type Stamper = { stamp(payload: string): Promise<{ stampHeaderName: string; stampHeaderValue: string }> }

/**
 * A session key pair the wallet stamps with itself, for Node tests only (the wallet's
 * `testOnlySessionKeys`). In a browser the key lives in the consent frame on the kms frames
 * origin, never in the app's page, where any script could stamp with it (security review H1).
 */
export type SessionKeyStore = {
  /** A new key pair replaces the old; resolves to its compressed public key (hex). */
  create(): Promise<string>
  /** The stored key's compressed public key, if one is stored. */
  publicKey(): Promise<string | undefined>
  /** Stamps with the stored key. */
  stamper: Stamper
  /** Deletes the stored key. */
  clear(): Promise<void>
  /** Seals the emailed code with the stored key, as the consent frame's COLLECT_OTP does (Node tests: nobody types). */
  collectOtp?(value: CollectOtpValue): Promise<CollectedOtp>
  /** Enrols or verifies a second factor with the stored key, as the consent frame does (Node tests: nobody types). */
  secondFactor?(request: SecondFactorRequest, carry: (submit: MfaSubmit) => Promise<MfaCarried>): Promise<SecondFactorDone>
}

/**
 * The `X-Stamp` of `payload` (the exact request body): base64url JSON of the compressed public
 * key, the scheme and the DER signature (hex) over SHA-256 of the body. WebCrypto signs in IEEE
 * P1363 (r ‖ s); the stamp carries DER, encoded by @noble/curves.
 *
 * @example
 * const { stampHeaderValue } = await stampWithKey(privateKey, '02ab…', JSON.stringify(body))
 */
export async function stampWithKey(
  privateKey: CryptoKey,
  publicKey: string,
  payload: string,
): Promise<{ stampHeaderName: 'X-Stamp'; stampHeaderValue: string }> {
  const raw = new Uint8Array(await crypto.subtle.sign({ name: 'ECDSA', hash: 'SHA-256' }, privateKey, new TextEncoder().encode(payload)))
  const signature = DER.hexFromSig({ r: bytesToNumberBE(raw.subarray(0, 32)), s: bytesToNumberBE(raw.subarray(32)) })
  const json = JSON.stringify({ publicKey, scheme: 'SIGNATURE_SCHEME_TK_API_P256', signature })
  return { stampHeaderName: 'X-Stamp', stampHeaderValue: btoa(json).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '') }
}
