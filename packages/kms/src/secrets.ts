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
export function seal(masterKey: Uint8Array, recordId: string, plaintext: string | Uint8Array): string {
  const iv = randomBytes(12)
  const cipher = createCipheriv('aes-256-gcm', masterKey, iv)
  cipher.setAAD(Buffer.from(recordId))
  const ciphertext = Buffer.concat([typeof plaintext === 'string' ? cipher.update(plaintext, 'utf8') : cipher.update(plaintext), cipher.final()])
  return `v1:${Buffer.concat([iv, ciphertext, cipher.getAuthTag()]).toString('base64')}`
}

/** The associated data a wallet account's sealed private key is bound to. */
export const accountKeyRecord = (accountId: string) => `wallet-account:${accountId}`

export function open(masterKey: Uint8Array, recordId: string, sealed: string): string {
  const bytes = openBytes(masterKey, recordId, sealed)
  const text = bytes.toString('utf8')
  bytes.fill(0)
  return text
}

/** `open` for binary key material: the caller zeroes the bytes once done with them. */
export function openBytes(masterKey: Uint8Array, recordId: string, sealed: string): Buffer {
  const bytes = sealed.startsWith('v1:') ? Buffer.from(sealed.slice(3), 'base64') : undefined
  if (!bytes || bytes.length < 28) throw new KmsError(GrpcCode.internal, 'stored key material is damaged')
  const decipher = createDecipheriv('aes-256-gcm', masterKey, bytes.subarray(0, 12))
  decipher.setAAD(Buffer.from(recordId))
  decipher.setAuthTag(bytes.subarray(bytes.length - 16))
  const head = decipher.update(bytes.subarray(12, bytes.length - 16))
  let tail: Buffer
  try {
    tail = decipher.final()
  } catch {
    // Unauthenticated plaintext is not kept around either.
    head.fill(0)
    throw new KmsError(GrpcCode.internal, 'stored key material does not open with this master key')
  }
  if (!tail.length) return head
  const whole = Buffer.concat([head, tail])
  head.fill(0)
  return whole
}
