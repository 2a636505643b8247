import type { EmbeddedKey } from './embeddedKey.js'
import { type Bytes, base58checkDecode, bytesToHex, FrameError, hexToBytes, utf8Decode } from './encoding.js'
import { hpkeOpen, hpkeSeal } from './hpke.js'
import { importSigningKey, uncompressedPoint, verifySignature } from './p256.js'
import { type Credential, stamp } from './stamp.js'

// What the frames do with bundles (research/turnkey-api.md §4): open credential bundles into a
// stamping key, verify and open export bundles, verify import bundles and seal secrets to them.

/** A credential opened from a bundle: a non-extractable signing key and its compressed public key. */
export type { Credential }
export { stamp }

/** Opens a credential bundle, base58check(compressed enc ‖ ciphertext), with the embedded key. */
export async function openCredentialBundle(bundle: string, embeddedKey: EmbeddedKey): Promise<Credential> {
  const bytes = await base58checkDecode(bundle.trim())
  if (bytes.length <= 33) throw new FrameError('the credential bundle is too short')
  const secret = await hpkeOpen({
    recipientPrivateKey: embeddedKey.privateKey,
    recipientPublicKey: embeddedKey.publicKey,
    enc: bytes.subarray(0, 33),
    ciphertext: bytes.subarray(33),
  })
  try {
    return await importSigningKey(secret)
  } finally {
    secret.fill(0)
  }
}

/**
 * The data of a signed `v1.0.0` envelope (export and import bundles), after checking that one of
 * the service's signer keys signed it. The keys are the ones baked into the page (the signer, and
 * its next one while it rotates), never the one the envelope names.
 */
export async function verifySignedBundle(bundle: string, signerPublicKeys: readonly string[]): Promise<Record<string, unknown>> {
  let envelope: Record<string, unknown>
  try {
    envelope = JSON.parse(bundle) as Record<string, unknown>
  } catch {
    throw new FrameError('the bundle is not JSON')
  }
  if (typeof envelope !== 'object' || envelope === null) throw new FrameError('the bundle is not a signed bundle')
  if (envelope['version'] !== 'v1.0.0') throw new FrameError(`unsupported bundle version ${JSON.stringify(envelope['version'])?.slice(0, 40)}`)
  const named = envelope['enclaveQuorumPublic']
  const accepted = signerPublicKeys.map((key) => key.toLowerCase())
  if (named !== undefined && (typeof named !== 'string' || !accepted.includes(named.toLowerCase())))
    throw new FrameError(`the bundle is signed by ${String(named).slice(0, 140)}, not by this service's signer ${accepted.join(' or ')}`)
  if (typeof envelope['data'] !== 'string' || typeof envelope['dataSignature'] !== 'string') throw new FrameError('the bundle has no data or no signature')
  const data = hexToBytes(envelope['data'], 'the bundle data')
  const signature = hexToBytes(envelope['dataSignature'], 'the bundle signature')
  // The named signer when the envelope names one (it must be accepted, above), else each accepted key.
  let valid = false
  for (const key of typeof named === 'string' ? [named.toLowerCase()] : accepted) {
    try {
      valid = await verifySignature(hexToBytes(key), signature, data)
    } catch {
      valid = false
    }
    if (valid) break
  }
  if (!valid) throw new FrameError('the bundle signature does not verify')
  try {
    const inner = JSON.parse(utf8Decode(data)) as unknown
    if (typeof inner === 'object' && inner !== null && !Array.isArray(inner)) return inner as Record<string, unknown>
  } catch {
    // Reported below.
  }
  throw new FrameError('the bundle data is not a JSON object')
}

const expectField = (data: Record<string, unknown>, field: string, expected: string, what: string) => {
  if (data[field] !== expected) throw new FrameError(`the bundle belongs to ${what} ${String(data[field]).slice(0, 80)}, not ${expected}`)
}

/** Verifies an export bundle for `organizationId` and opens it with the embedded key. */
export async function openExportBundle(parameters: {
  bundle: string
  organizationId: string
  signerPublicKeys: readonly string[]
  embeddedKey: EmbeddedKey
}): Promise<Bytes> {
  const data = await verifySignedBundle(parameters.bundle, parameters.signerPublicKeys)
  expectField(data, 'organizationId', parameters.organizationId, 'organization')
  if (typeof data['encappedPublic'] !== 'string' || typeof data['ciphertext'] !== 'string')
    throw new FrameError('the export bundle has no encappedPublic or ciphertext')
  return hpkeOpen({
    recipientPrivateKey: parameters.embeddedKey.privateKey,
    recipientPublicKey: parameters.embeddedKey.publicKey,
    enc: hexToBytes(data['encappedPublic'], 'encappedPublic'),
    ciphertext: hexToBytes(data['ciphertext'], 'ciphertext'),
  })
}

/** Verifies an import bundle for `organizationId` and `userId`; returns the target key (uncompressed). */
export async function readImportBundle(parameters: {
  bundle: string
  organizationId: string
  userId: string
  signerPublicKeys: readonly string[]
}): Promise<Bytes> {
  const data = await verifySignedBundle(parameters.bundle, parameters.signerPublicKeys)
  expectField(data, 'organizationId', parameters.organizationId, 'organization')
  expectField(data, 'userId', parameters.userId, 'user')
  if (typeof data['targetPublic'] !== 'string') throw new FrameError('the import bundle has no targetPublic')
  return uncompressedPoint(hexToBytes(data['targetPublic'], 'targetPublic'))
}

/** `plaintext` sealed to the import target: the `encryptedBundle` import_wallet and import_private_key take. */
export async function sealImportBundle(targetPublicKey: Uint8Array, plaintext: Uint8Array): Promise<string> {
  const { enc, ciphertext } = await hpkeSeal({ recipientPublicKey: targetPublicKey, plaintext })
  return JSON.stringify({ encappedPublic: bytesToHex(enc), ciphertext: bytesToHex(ciphertext) })
}
