import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto'
import { GrpcCode, KmsError } from './errors.js'

/**
 * Key material at rest: AES-256-GCM under the service's master key, with the record's id as
 * associated data so a sealed value cannot be moved to another row.
 *
 * @example
 * const sealed = seal(masterKey, walletId, mnemonic)
 * open(masterKey, walletId, sealed) === mnemonic
 */
export function seal(masterKey: Uint8Array, recordId: string, plaintext: string): string {
  const iv = randomBytes(12)
  const cipher = createCipheriv('aes-256-gcm', masterKey, iv)
  cipher.setAAD(Buffer.from(recordId))
  const ciphertext = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()])
  return `v1:${Buffer.concat([iv, ciphertext, cipher.getAuthTag()]).toString('base64')}`
}

export function open(masterKey: Uint8Array, recordId: string, sealed: string): string {
  const bytes = sealed.startsWith('v1:') ? Buffer.from(sealed.slice(3), 'base64') : undefined
  if (!bytes || bytes.length < 28) throw new KmsError(GrpcCode.internal, 'stored key material is damaged')
  const decipher = createDecipheriv('aes-256-gcm', masterKey, bytes.subarray(0, 12))
  decipher.setAAD(Buffer.from(recordId))
  decipher.setAuthTag(bytes.subarray(bytes.length - 16))
  try {
    return Buffer.concat([decipher.update(bytes.subarray(12, bytes.length - 16)), decipher.final()]).toString('utf8')
  } catch {
    throw new KmsError(GrpcCode.internal, 'stored key material does not open with this master key')
  }
}
