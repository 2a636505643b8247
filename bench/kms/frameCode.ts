import { readOtpTarget, sealOtpCode } from '../../packages/kms/src/frames/browser/consentOtpBundle.js'
import { bytesToHex } from '../../packages/kms/src/frames/browser/encoding.js'
import { compressedPoint } from '../../packages/kms/src/frames/browser/p256.js'

/**
 * The consent frame's answer to COLLECT_OTP, made by the frame's own code (consentOtpBundle.ts)
 * on Node's WebCrypto, as the browser runs it: the kms's target bundle checked against the signer
 * key, the code sealed to its target (HPKE), and the login signed by a new signing key of the
 * frame (a non-extractable ECDSA P-256 key, its public key compressed). What bench:kms times as
 * the browser's part of an email sign-in.
 *
 * @example
 * const sealed = await sealCodeAsFrame({ otpEncryptionTargetBundle, email, code, signerPublicKey })
 */
export async function sealCodeAsFrame(parameters: { otpEncryptionTargetBundle: string; email: string; code: string; signerPublicKey: string }) {
  const pair = await crypto.subtle.generateKey({ name: 'ECDSA', namedCurve: 'P-256' }, false, ['sign'])
  const publicKey = new Uint8Array(await crypto.subtle.exportKey('raw', pair.publicKey))
  const key = { privateKey: pair.privateKey, publicKey, publicKeyHex: bytesToHex(compressedPoint(publicKey)), expiresAt: Number.POSITIVE_INFINITY }
  const { target, otpId } = await readOtpTarget({ targetBundle: parameters.otpEncryptionTargetBundle, email: parameters.email }, [parameters.signerPublicKey])
  const { encryptedOtpBundle, clientSignature } = await sealOtpCode({ code: parameters.code, target, otpId, key })
  return { encryptedOtpBundle, clientSignature }
}
