import { Aes256Gcm, CipherSuite, DhkemP256HkdfSha256, HkdfSha256 } from '@hpke/core'
import { p256 } from '@noble/curves/p256'
import { sha256 } from '@noble/hashes/sha2'
import { createBase58check } from '@scure/base'
import { GrpcCode, invalid, KmsError, permissionDenied } from './errors.js'

// Bundles as the Turnkey clients and frames read them (research/turnkey-api.md §4): RFC 9180 HPKE
// base mode, DHKEM(P-256, HKDF-SHA256), HKDF-SHA256, AES-256-GCM, info "turnkey_hpke", and the
// associated data enc ‖ pkR, both uncompressed. WebCrypto underneath, so this file runs in the
// frames as well as in the service.

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

/** Opens what `hpkeSeal` made for the key pair of `recipientPrivateKey` (32 bytes, hex). */
export async function hpkeOpen(recipientPrivateKey: string, enc: Uint8Array, ciphertext: Uint8Array): Promise<Uint8Array> {
  const secret = hexToBytes(recipientPrivateKey)
  const pkR = p256.getPublicKey(secret, false)
  const recipient = await suite.createRecipientContext({
    recipientKey: await suite.kem.deserializePrivateKey(secret),
    enc: p256.ProjectivePoint.fromHex(enc).toRawBytes(false),
    info: INFO,
  })
  try {
    return new Uint8Array(await recipient.open(ciphertext, concat(p256.ProjectivePoint.fromHex(enc).toRawBytes(false), pkR)))
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
  const signature = p256.sign(sha256(bytes), hexToBytes(signerPrivateKey)).toDERHex()
  const bundle: SignedBundle = {
    version: 'v1.0.0',
    data: bytesToHex(bytes),
    dataSignature: signature,
    enclaveQuorumPublic: bytesToHex(p256.getPublicKey(hexToBytes(signerPrivateKey), false)),
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
