import { Aes256Gcm, CipherSuite, DhkemP256HkdfSha256, HkdfSha256 } from '@hpke/core'
import { type Bytes, concatBytes, FrameError, utf8Encode } from './encoding.js'
import { uncompressedPoint } from './p256.js'

// RFC 9180 HPKE, base mode, single shot, for the one suite the bundles use: DHKEM(P-256,
// HKDF-SHA256), HKDF-SHA256, AES-256-GCM, from @hpke/core (the library the service's side,
// packages/kms/src/bundles.ts, uses) over WebCrypto. Bundles use info "turnkey_hpke" and
// associated data enc ‖ pkR, both uncompressed (research/turnkey-api.md §4.1).

export const BUNDLE_INFO = utf8Encode('turnkey_hpke')

const suite = new CipherSuite({ kem: new DhkemP256HkdfSha256(), kdf: new HkdfSha256(), aead: new Aes256Gcm() })

/**
 * Encrypts `plaintext` to `recipientPublicKey` (SEC1, either form). Returns the encapsulated key
 * (65 bytes, uncompressed) and the ciphertext with its tag. Associated data: enc ‖ pkR.
 */
export async function hpkeSeal(parameters: {
  recipientPublicKey: Uint8Array
  plaintext: Uint8Array
  info?: Uint8Array
}): Promise<{ enc: Bytes; ciphertext: Bytes }> {
  const pkR = uncompressedPoint(parameters.recipientPublicKey)
  const sender = await suite.createSenderContext({
    recipientPublicKey: await suite.kem.deserializePublicKey(pkR),
    info: concatBytes(parameters.info ?? BUNDLE_INFO),
  })
  const enc = new Uint8Array(sender.enc)
  const ciphertext = new Uint8Array(await sender.seal(concatBytes(parameters.plaintext), concatBytes(enc, pkR)))
  return { enc, ciphertext }
}

/**
 * Opens what `hpkeSeal` (or the service) encrypted to the key pair of `recipientPrivateKey` (an
 * ECDH P-256 key, non-extractable) whose public key is `recipientPublicKey` (SEC1). The pair is
 * handed to @hpke/core whole, so it never needs to export the private key.
 */
export async function hpkeOpen(parameters: {
  recipientPrivateKey: CryptoKey
  recipientPublicKey: Uint8Array
  enc: Uint8Array
  ciphertext: Uint8Array
  info?: Uint8Array
}): Promise<Bytes> {
  const enc = uncompressedPoint(parameters.enc)
  const pkR = uncompressedPoint(parameters.recipientPublicKey)
  try {
    const recipient = await suite.createRecipientContext({
      recipientKey: { privateKey: parameters.recipientPrivateKey, publicKey: await suite.kem.deserializePublicKey(pkR) },
      enc,
      info: concatBytes(parameters.info ?? BUNDLE_INFO),
    })
    return new Uint8Array(await recipient.open(concatBytes(parameters.ciphertext), concatBytes(enc, pkR)))
  } catch {
    throw new FrameError('the bundle does not open with this frame’s key')
  }
}
