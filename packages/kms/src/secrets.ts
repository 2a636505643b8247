import { GrpcCode, KmsError } from './errors.js'
import type { Keyring } from './keyring/keyring.js'
import { decrypt, encrypt } from './keyring/keyring.js'

/**
 * What seals key material at rest: the service's keyring (data keys wrapped by its KEK,
 * keyring/keyring.ts), or a bare 32-byte master key (the `v1:` format the kms wrote before data
 * keys, kept for tests and tools that seal without a database).
 */
export type SealingKey = Keyring | Uint8Array

/**
 * Key material at rest: AES-256-GCM, with the record's id as associated data so a sealed value
 * cannot be moved to another row; under the keyring's active data key, whose id the sealed text
 * carries (`v2:<data key>:…`).
 *
 * @example
 * const sealed = seal(keyring, walletId, mnemonic)
 * open(keyring, walletId, sealed) === mnemonic
 */
export function seal(key: SealingKey, recordId: string, plaintext: string | Uint8Array): string {
  if (!(key instanceof Uint8Array)) return key.seal(recordId, plaintext)
  return `v1:${encrypt(key, recordId, plaintext)}`
}

/** The associated data a wallet account's sealed private key is bound to. */
export const accountKeyRecord = (accountId: string) => `wallet-account:${accountId}`

export function open(key: SealingKey, recordId: string, sealed: string): string {
  const bytes = openBytes(key, recordId, sealed)
  const text = bytes.toString('utf8')
  bytes.fill(0)
  return text
}

/** `open` for binary key material: the caller zeroes the bytes once done with them. */
export function openBytes(key: SealingKey, recordId: string, sealed: string): Buffer {
  if (!(key instanceof Uint8Array)) return key.openBytes(recordId, sealed)
  if (!sealed.startsWith('v1:')) throw new KmsError(GrpcCode.internal, 'stored key material is damaged')
  return decrypt(key, recordId, sealed.slice(3))
}
