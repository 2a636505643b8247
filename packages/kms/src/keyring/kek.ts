import { createCipheriv, createDecipheriv, createHash, randomBytes } from 'node:crypto'

/**
 * A key-encryption key: wraps and unwraps the data keys (DEKs) that seal the rows, and never hands
 * out its own key material. Providers: `envKek` (the master key setting), `pkcs11Kek` (a key in an
 * HSM, wrapped and unwrapped inside the token); a cloud KMS fits the same shape (its Encrypt and
 * Decrypt calls).
 *
 * @example
 * const wrapped = await kek.wrap(dekId, dek)
 * const dek = await kek.unwrap(dekId, wrapped)
 */
export type Kek = {
  /** Names the key (never its material): stored beside every data key it wraps. */
  readonly id: string
  /** `dekId` is bound to the wrapped bytes, so a wrapped key cannot be moved to another id. */
  wrap(dekId: string, dek: Uint8Array): Promise<Uint8Array>
  unwrap(dekId: string, wrapped: Uint8Array): Promise<Uint8Array>
  /** Throws unless the key can be used now (an HSM token that went away): the kms's `/readyz`. */
  check(): Promise<void>
  close(): Promise<void>
}

/** A data key's wrap could not be undone: the wrong KEK, or altered bytes. */
export class KekError extends Error {
  override name = 'KekError'
}

/** `dekId` as the associated data of its wrapping. */
export const wrapContext = (dekId: string) => Buffer.from(`latchkey-dek:${dekId}`)

/**
 * The KEK held in the process: the 32-byte master key setting (LATCHKEY_KMS_MASTER_KEY). Its id
 * is a fingerprint of the key (SHA-256, 16 hex), so a wrong key is told apart from damaged bytes.
 */
export function envKek(masterKey: Uint8Array): Kek {
  if (masterKey.length !== 32) throw new Error('masterKey must be 32 bytes')
  const key = Buffer.from(masterKey)
  return {
    id: `env:${createHash('sha256').update(key).digest('hex').slice(0, 16)}`,
    async wrap(dekId, dek) {
      const iv = randomBytes(12)
      const cipher = createCipheriv('aes-256-gcm', key, iv)
      cipher.setAAD(wrapContext(dekId))
      return Buffer.concat([iv, cipher.update(dek), cipher.final(), cipher.getAuthTag()])
    },
    async unwrap(dekId, wrapped) {
      const bytes = Buffer.from(wrapped)
      if (bytes.length < 28) throw new KekError(`data key ${dekId} is damaged`)
      const decipher = createDecipheriv('aes-256-gcm', key, bytes.subarray(0, 12))
      decipher.setAAD(wrapContext(dekId))
      decipher.setAuthTag(bytes.subarray(bytes.length - 16))
      try {
        return Buffer.concat([decipher.update(bytes.subarray(12, bytes.length - 16)), decipher.final()])
      } catch {
        throw new KekError(`data key ${dekId} does not unwrap with this key`)
      }
    },
    async check() {},
    async close() {
      key.fill(0)
    },
  }
}
