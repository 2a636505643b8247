import { sealImportBundle, verifySignedBundle } from './bundles.js'
import { bytesToHex, FrameError, hexToBytes, utf8Encode } from './encoding.js'
import type { FrameKey } from './frameKeys.js'
import { uncompressedPoint } from './p256.js'

// COLLECT_OTP's cryptography (consentOtp.ts), loaded when a code is first asked for so the consent
// page's first load stays small: the kms's target bundle checked against the signer key the page
// names, and the typed code sealed to its target exactly as @turnkey/crypto's
// encryptOtpCodeToBundle seals it ({otp_code, public_key}, HPKE, {encappedPublic, ciphertext}).

export type CollectOtpValue = { readonly targetBundle: string; readonly email: string; readonly otpId?: string | undefined }

/** What otp_login V2 takes as `clientSignature`: the frame key's raw r ‖ s over SHA-256 of `message`. */
export type ClientSignature = {
  readonly publicKey: string
  readonly scheme: 'CLIENT_SIGNATURE_SCHEME_API_P256'
  readonly message: string
  readonly signature: string
}

export type OtpCollected = { readonly encryptedOtpBundle: string; readonly clientSignature: ClientSignature; readonly publicKey: string }

/**
 * The target key, otpId and email of a bundle one of the kms's signer keys (the current or the
 * next) signed; refused (FrameError) otherwise. The email the dialog names is the one the kms
 * signed (where it sent the code): a page that relays the bundle with another address is refused,
 * so it cannot have the frame ask for one account's code under another's name.
 */
export async function readOtpTarget(
  value: CollectOtpValue,
  signerPublicKeys: readonly string[],
): Promise<{ target: Uint8Array; otpId: string; email: string }> {
  const data = await verifySignedBundle(value.targetBundle, signerPublicKeys)
  if (typeof data['otpId'] !== 'string' || data['otpId'].length === 0) throw new FrameError('the bundle names no otpId')
  if (value.otpId !== undefined && data['otpId'] !== value.otpId)
    throw new FrameError(`the bundle is for code ${data['otpId'].slice(0, 64)}, not ${value.otpId}`)
  if (typeof data['targetPublic'] !== 'string') throw new FrameError('the bundle has no targetPublic')
  const contact = data['contact']
  if (typeof contact !== 'string' || contact.length === 0 || contact.length > 320) throw new FrameError('the bundle names no contact the code went to')
  if (contact.toLowerCase() !== value.email.toLowerCase()) throw new FrameError(`the code was sent to another address than ${value.email.slice(0, 320)}`)
  return { target: uncompressedPoint(hexToBytes(data['targetPublic'], 'targetPublic')), otpId: data['otpId'], email: contact }
}

/**
 * `code` sealed to `target` for verify_otp V2, and `key`'s signature of its own login for
 * otp_login V2 (the verification token's id is the otpId). The code goes nowhere else.
 *
 * @example
 * const answer = await sealOtpCode({ code: '123456', target, otpId, key })
 */
export async function sealOtpCode(parameters: { code: string; target: Uint8Array; otpId: string; key: FrameKey }): Promise<OtpCollected> {
  const { code, target, otpId, key } = parameters
  const publicKey = key.publicKeyHex
  const encryptedOtpBundle = await sealImportBundle(target, utf8Encode(JSON.stringify({ otp_code: code, public_key: publicKey })))
  const message = JSON.stringify({ login: { publicKey }, tokenId: otpId, type: 'USAGE_TYPE_LOGIN' })
  const signature = new Uint8Array(await crypto.subtle.sign({ name: 'ECDSA', hash: 'SHA-256' }, key.privateKey, utf8Encode(message)))
  return {
    encryptedOtpBundle,
    clientSignature: { publicKey, scheme: 'CLIENT_SIGNATURE_SCHEME_API_P256', message, signature: bytesToHex(signature) },
    publicKey,
  }
}
