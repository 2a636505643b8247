import { createDecipheriv, createECDH, createHmac } from 'node:crypto'
import { Aes256Gcm, CipherSuite, DhkemP256HkdfSha256, HkdfSha256 } from '@hpke/core'
import { p256 } from '@noble/curves/p256'
import { sha256 } from '@noble/hashes/sha2'
import { createBase58check } from '@scure/base'
import { GrpcCode, invalid, KmsError, permissionDenied } from './errors.js'
import { p256PublicKey, p256Sign } from './p256.js'

// Bundles as the Turnkey clients and frames read them (research/turnkey-api.md §4): RFC 9180 HPKE
// base mode, DHKEM(P-256, HKDF-SHA256), HKDF-SHA256, AES-256-GCM, info "turnkey_hpke", and the
// associated data enc ‖ pkR, both uncompressed. Sealing by @hpke/core over WebCrypto; opening,
// the signer key's signatures and the recipient's public key by OpenSSL (`hpkeOpen`, p256.ts).

const INFO = new TextEncoder().encode('turnkey_hpke')
const suite = new CipherSuite({ kem: new DhkemP256HkdfSha256(), kdf: new HkdfSha256(), aead: new Aes256Gcm() })
const base58check = createBase58check(sha256)

const hexToBytes = (hex: string) => {
  const clean = hex.startsWith('0x') ? hex.slice(2) : hex
  if (!/^(?:[0-9a-fA-F]{2})*$/.test(clean)) throw invalid('expected hexadecimal')
  return Uint8Array.from(clean.match(/../g) ?? [], (byte) => Number.parseInt(byte, 16))
}
const bytesToHex = (bytes: Uint8Array) => Array.from(bytes, (byte) => byte.toString(16).padStart(2, '0')).join('')
const concat = (...parts: Uint8Array[]) => {
  const out = new Uint8Array(parts.reduce((sum, part) => sum + part.length, 0))
  let offset = 0
  for (const part of parts) out.set(part, offset), (offset += part.length)
  return out
}

/** A P-256 public key in either SEC1 form, as its 65-byte uncompressed encoding. */
export function uncompressedPublicKey(hex: string): Uint8Array {
  try {
    return p256.ProjectivePoint.fromHex(hexToBytes(hex)).toRawBytes(false)
  } catch {
    throw invalid('targetPublicKey must be a P-256 public key (33 or 65 bytes of hex)')
  }
}

/** Encrypts to `recipientPublicKey`; returns the encapsulated key (uncompressed) and the ciphertext. */
export async function hpkeSeal(recipientPublicKey: string, plaintext: Uint8Array): Promise<{ enc: Uint8Array; ciphertext: Uint8Array }> {
  const pkR = uncompressedPublicKey(recipientPublicKey)
  const sender = await suite.createSenderContext({ recipientPublicKey: await suite.kem.deserializePublicKey(pkR), info: INFO })
  const enc = new Uint8Array(sender.enc)
  const ciphertext = new Uint8Array(await sender.seal(plaintext, concat(enc, pkR)))
  return { enc, ciphertext }
}

// RFC 9180's labelled HKDF for this one suite, by node:crypto: `suite` is "KEM" ‖ kem id for the
// KEM's steps, "HPKE" ‖ kem, kdf and aead ids for the key schedule.
const KEM_SUITE = Buffer.from('KEM\x00\x10', 'latin1')
const HPKE_SUITE = Buffer.from('HPKE\x00\x10\x00\x01\x00\x02', 'latin1')
const hpkeV1 = Buffer.from('HPKE-v1')
const labeledExtract = (suiteId: Buffer, salt: Uint8Array, label: string, ikm: Uint8Array) =>
  createHmac('sha256', salt.length ? salt : Buffer.alloc(32))
    .update(Buffer.concat([hpkeV1, suiteId, Buffer.from(label), ikm]))
    .digest()
const labeledExpand = (suiteId: Buffer, prk: Buffer, label: string, info: Uint8Array, length: number) => {
  // One HKDF-Expand block is enough: every output here is at most 32 bytes.
  const lengthBytes = Buffer.from([length >> 8, length & 0xff])
  return createHmac('sha256', prk)
    .update(Buffer.concat([lengthBytes, hpkeV1, suiteId, Buffer.from(label), info, Buffer.from([1])]))
    .digest()
    .subarray(0, length)
}

/**
 * Opens what `hpkeSeal` made for the key pair of `recipientPrivateKey` (32 bytes, hex): RFC 9180
 * base mode, single shot, for this file's one suite, by OpenSSL (node:crypto) rather than
 * @hpke/core over WebCrypto, whose key imports and promises cost about a millisecond per bundle
 * (every email code's verify_otp opens one). `hpkeSeal`'s output, the frames' and @turnkey/crypto's
 * open here as before (test/bundles.test.ts).
 */
export async function hpkeOpen(recipientPrivateKey: string, enc: Uint8Array, ciphertext: Uint8Array): Promise<Uint8Array> {
  const secret = hexToBytes(recipientPrivateKey)
  const pkR = p256PublicKey(secret)
  const pkE = p256.ProjectivePoint.fromHex(enc).toRawBytes(false)
  const ecdh = createECDH('prime256v1')
  ecdh.setPrivateKey(secret)
  try {
    // Decap: the shared secret from DH(skR, pkE) and enc ‖ pkR.
    const dh = ecdh.computeSecret(pkE)
    const eaePrk = labeledExtract(KEM_SUITE, new Uint8Array(0), 'eae_prk', dh)
    const sharedSecret = labeledExpand(KEM_SUITE, eaePrk, 'shared_secret', concat(pkE, pkR), 32)
    // The key schedule, base mode (no PSK).
    const context = concat(
      new Uint8Array([0]),
      labeledExtract(HPKE_SUITE, new Uint8Array(0), 'psk_id_hash', new Uint8Array(0)),
      labeledExtract(HPKE_SUITE, new Uint8Array(0), 'info_hash', INFO),
    )
    const schedule = labeledExtract(HPKE_SUITE, sharedSecret, 'secret', new Uint8Array(0))
    const key = labeledExpand(HPKE_SUITE, schedule, 'key', context, 32)
    const nonce = labeledExpand(HPKE_SUITE, schedule, 'base_nonce', context, 12)
    if (ciphertext.length < 16) throw new Error('too short')
    const decipher = createDecipheriv('aes-256-gcm', key, nonce)
    decipher.setAAD(concat(pkE, pkR))
    decipher.setAuthTag(ciphertext.subarray(ciphertext.length - 16))
    return new Uint8Array(Buffer.concat([decipher.update(ciphertext.subarray(0, ciphertext.length - 16)), decipher.final()]))
  } catch {
    throw invalid('the bundle does not open with this key')
  }
}

/**
 * A credential bundle: a new API key's private key, encrypted to the client's target key, as
 * base58check(compressed enc ‖ ciphertext). Unsigned: the target key is what protects it.
 */
export async function credentialBundle(targetPublicKey: string, privateKey: Uint8Array): Promise<string> {
  const { enc, ciphertext } = await hpkeSeal(targetPublicKey, privateKey)
  return base58check.encode(concat(p256.ProjectivePoint.fromHex(enc).toRawBytes(true), ciphertext))
}

/** The private key inside a credential bundle, hex. */
export async function openCredentialBundle(bundle: string, recipientPrivateKey: string): Promise<string> {
  let bytes: Uint8Array
  try {
    bytes = base58check.decode(bundle)
  } catch {
    throw invalid('the credential bundle is not base58check')
  }
  return bytesToHex(await hpkeOpen(recipientPrivateKey, bytes.subarray(0, 33), bytes.subarray(33)))
}

/** The signed envelope of export and import bundles. */
export type SignedBundle = { version: 'v1.0.0'; data: string; dataSignature: string; enclaveQuorumPublic: string }

/** Signs `data` (its raw bytes, as hex in the envelope) with the service's signer key. */
export function signBundle(signerPrivateKey: string, data: object): string {
  const bytes = new TextEncoder().encode(JSON.stringify(data))
  const bundle: SignedBundle = {
    version: 'v1.0.0',
    data: bytesToHex(bytes),
    dataSignature: p256Sign(signerPrivateKey, bytes, 'der').toString('hex'),
    enclaveQuorumPublic: p256PublicKey(signerPrivateKey).toString('hex'),
  }
  return JSON.stringify(bundle)
}

/**
 * An export bundle: `plaintext` (a mnemonic, or a private key's bytes) encrypted to the target key
 * and signed, naming the organization it belongs to.
 */
export async function exportBundle(parameters: {
  signerPrivateKey: string
  organizationId: string
  targetPublicKey: string
  plaintext: Uint8Array
}): Promise<string> {
  const { enc, ciphertext } = await hpkeSeal(parameters.targetPublicKey, parameters.plaintext)
  return signBundle(parameters.signerPrivateKey, {
    encappedPublic: bytesToHex(enc),
    ciphertext: bytesToHex(ciphertext),
    organizationId: parameters.organizationId,
  })
}

/**
 * Verifies an export bundle against the signer key the caller trusts and the organization it
 * expects, then decrypts it. What the export frame does; also opens bundles of the hosted service.
 *
 * @example
 * const mnemonic = new TextDecoder().decode(await openExportBundle({ bundle, recipientPrivateKey, signerPublicKey, organizationId }))
 */
export async function openExportBundle(parameters: {
  bundle: string
  recipientPrivateKey: string
  signerPublicKey: string
  organizationId: string
}): Promise<Uint8Array> {
  let envelope: Partial<SignedBundle>
  try {
    envelope = JSON.parse(parameters.bundle)
  } catch {
    throw invalid('the export bundle is not JSON')
  }
  if (envelope.version !== 'v1.0.0') throw invalid(`unsupported bundle version ${String(envelope.version)}`)
  if (envelope.enclaveQuorumPublic?.toLowerCase() !== parameters.signerPublicKey.toLowerCase())
    throw new KmsError(
      GrpcCode.permissionDenied,
      `the bundle is signed by ${String(envelope.enclaveQuorumPublic)}, not the expected signer ${parameters.signerPublicKey}`,
    )
  const data = hexToBytes(envelope.data ?? '')
  let valid = false
  try {
    valid = p256.verify(envelope.dataSignature ?? '', sha256(data), parameters.signerPublicKey, { lowS: false })
  } catch {
    valid = false
  }
  if (!valid) throw permissionDenied('the bundle signature does not verify')
  const inner = JSON.parse(new TextDecoder().decode(data)) as { encappedPublic?: string; ciphertext?: string; organizationId?: string }
  if (inner.organizationId !== parameters.organizationId)
    throw permissionDenied(`the bundle belongs to organization ${String(inner.organizationId)}, not ${parameters.organizationId}`)
  return hpkeOpen(parameters.recipientPrivateKey, hexToBytes(inner.encappedPublic ?? ''), hexToBytes(inner.ciphertext ?? ''))
}
