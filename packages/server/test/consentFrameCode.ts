import { createPrivateKey, sign } from 'node:crypto'
import { encryptOtpCodeToBundle, getPublicKey } from '@turnkey/crypto'

// What the consent frame answers to COLLECT_OTP, made here for the backend's tests: the typed
// code sealed to the kms's target key with the frame key's public key, and that key's signature
// of its login (raw r‖s over SHA-256, as @turnkey/core signs it). The token id is the otpId,
// which the signed bundle names.

type Keys = { apiPublicKey: string; apiPrivateKey: string }

/** `{encryptedOtpBundle, clientSignature}` for `code`, as the frame holding `key` makes them. */
export async function sealCode(parameters: { otpEncryptionTargetBundle: string; code: string; key: Keys; signerPublicKey: string }) {
  const { otpEncryptionTargetBundle, code, key, signerPublicKey } = parameters
  const data = JSON.parse(Buffer.from(JSON.parse(otpEncryptionTargetBundle).data, 'hex').toString()) as { otpId: string }
  const encryptedOtpBundle = await encryptOtpCodeToBundle(code, otpEncryptionTargetBundle, key.apiPublicKey, signerPublicKey)
  const message = JSON.stringify({ login: { publicKey: key.apiPublicKey }, tokenId: data.otpId, type: 'USAGE_TYPE_LOGIN' })
  const point = Buffer.from(getPublicKey(key.apiPrivateKey, false))
  const privateKey = createPrivateKey({
    format: 'jwk',
    key: {
      kty: 'EC',
      crv: 'P-256',
      d: Buffer.from(key.apiPrivateKey, 'hex').toString('base64url'),
      x: point.subarray(1, 33).toString('base64url'),
      y: point.subarray(33).toString('base64url'),
    },
  })
  const signature = sign('sha256', Buffer.from(message), { key: privateKey, dsaEncoding: 'ieee-p1363' }).toString('hex')
  return { encryptedOtpBundle, clientSignature: { publicKey: key.apiPublicKey, scheme: 'CLIENT_SIGNATURE_SCHEME_API_P256', message, signature } }
}
