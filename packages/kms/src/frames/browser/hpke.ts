import { type Bytes, concatBytes, FrameError, utf8Encode } from './encoding.js'
import { uncompressedPoint } from './p256.js'

// RFC 9180 HPKE, base mode, single shot, for the one suite the bundles use:
// DHKEM(P-256, HKDF-SHA256) 0x0010, HKDF-SHA256 0x0001, AES-256-GCM 0x0002. Built from WebCrypto's
// ECDH, HMAC-SHA-256 and AES-GCM; the labels and lengths are those of RFC 9180 §4, §5.1 and §7.
// Bundles use info "turnkey_hpke" and associated data enc ‖ pkR, both uncompressed
// (research/turnkey-api.md §4.1; packages/kms/src/bundles.ts is the service's side).

export const BUNDLE_INFO = utf8Encode('turnkey_hpke')

const KEM_SUITE = concatBytes(utf8Encode('KEM'), Uint8Array.of(0x00, 0x10))
const HPKE_SUITE = concatBytes(utf8Encode('HPKE'), Uint8Array.of(0x00, 0x10, 0x00, 0x01, 0x00, 0x02))
const VERSION = utf8Encode('HPKE-v1')
const MODE_BASE = Uint8Array.of(0x00)

async function hmac(key: Uint8Array<ArrayBuffer>, data: Uint8Array<ArrayBuffer>): Promise<Bytes> {
  const hmacKey = await crypto.subtle.importKey('raw', key, { name: 'HMAC', hash: 'SHA-256' }, false, ['sign'])
  return new Uint8Array(await crypto.subtle.sign('HMAC', hmacKey, data))
}

// RFC 5869 Extract; an empty salt is HashLen zeros (an HMAC key is zero-padded, so it is the same key).
const extract = (salt: Uint8Array, ikm: Uint8Array) => hmac(salt.length ? concatBytes(salt) : new Uint8Array(32), concatBytes(ikm))

async function expand(prk: Bytes, info: Uint8Array, length: number): Promise<Bytes> {
  const blocks: Bytes[] = []
  let previous: Bytes = new Uint8Array(0)
  for (let counter = 1; blocks.length * 32 < length; counter++) {
    previous = await hmac(prk, concatBytes(previous, info, Uint8Array.of(counter)))
    blocks.push(previous)
  }
  return concatBytes(...blocks).slice(0, length)
}

const labeledExtract = (suite: Uint8Array, salt: Uint8Array, label: string, ikm: Uint8Array) =>
  extract(salt, concatBytes(VERSION, suite, utf8Encode(label), ikm))
const labeledExpand = (suite: Uint8Array, prk: Bytes, label: string, info: Uint8Array, length: number) =>
  expand(prk, concatBytes(Uint8Array.of(length >> 8, length & 0xff), VERSION, suite, utf8Encode(label), info), length)

/** DHKEM's shared secret from the raw ECDH output and enc ‖ pkR. */
async function sharedSecret(dh: Uint8Array, kemContext: Uint8Array): Promise<Bytes> {
  const prk = await labeledExtract(KEM_SUITE, new Uint8Array(0), 'eae_prk', dh)
  return labeledExpand(KEM_SUITE, prk, 'shared_secret', kemContext, 32)
}

/** The AES-256-GCM key and the nonce of sequence number 0 (the only message a bundle holds). */
async function keySchedule(secret: Uint8Array, info: Uint8Array): Promise<{ key: CryptoKey; nonce: Bytes }> {
  const pskIdHash = await labeledExtract(HPKE_SUITE, new Uint8Array(0), 'psk_id_hash', new Uint8Array(0))
  const infoHash = await labeledExtract(HPKE_SUITE, new Uint8Array(0), 'info_hash', info)
  const context = concatBytes(MODE_BASE, pskIdHash, infoHash)
  const prk = await labeledExtract(HPKE_SUITE, secret, 'secret', new Uint8Array(0))
  const keyBytes = await labeledExpand(HPKE_SUITE, prk, 'key', context, 32)
  const nonce = await labeledExpand(HPKE_SUITE, prk, 'base_nonce', context, 12)
  const key = await crypto.subtle.importKey('raw', keyBytes, 'AES-GCM', false, ['encrypt', 'decrypt'])
  return { key, nonce }
}

const ecdh = async (privateKey: CryptoKey, publicKey: Bytes) => {
  const peer = await crypto.subtle.importKey('raw', publicKey, { name: 'ECDH', namedCurve: 'P-256' }, false, [])
  return new Uint8Array(await crypto.subtle.deriveBits({ name: 'ECDH', public: peer }, privateKey, 256))
}

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
  const ephemeral = await crypto.subtle.generateKey({ name: 'ECDH', namedCurve: 'P-256' }, false, ['deriveBits'])
  const enc = new Uint8Array(await crypto.subtle.exportKey('raw', ephemeral.publicKey))
  const secret = await sharedSecret(await ecdh(ephemeral.privateKey, pkR), concatBytes(enc, pkR))
  const { key, nonce } = await keySchedule(secret, parameters.info ?? BUNDLE_INFO)
  const ciphertext = new Uint8Array(
    await crypto.subtle.encrypt({ name: 'AES-GCM', iv: nonce, additionalData: concatBytes(enc, pkR) }, key, concatBytes(parameters.plaintext)),
  )
  return { enc, ciphertext }
}

/**
 * Opens what `hpkeSeal` (or the service) encrypted to the key pair of `recipientPrivateKey` (an
 * ECDH P-256 key) whose public key is `recipientPublicKey` (65 bytes, uncompressed).
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
  let dh: Bytes
  try {
    dh = await ecdh(parameters.recipientPrivateKey, enc)
  } catch {
    throw new FrameError('the bundle does not open with this frame’s key')
  }
  const secret = await sharedSecret(dh, concatBytes(enc, pkR))
  const { key, nonce } = await keySchedule(secret, parameters.info ?? BUNDLE_INFO)
  try {
    return new Uint8Array(
      await crypto.subtle.decrypt({ name: 'AES-GCM', iv: nonce, additionalData: concatBytes(enc, pkR) }, key, concatBytes(parameters.ciphertext)),
    )
  } catch {
    throw new FrameError('the bundle does not open with this frame’s key')
  }
}
