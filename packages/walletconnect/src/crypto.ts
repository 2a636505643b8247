import { chacha20poly1305 } from '@noble/ciphers/chacha.js'
import { x25519 } from '@noble/curves/ed25519.js'
import { hkdf } from '@noble/hashes/hkdf.js'
import { sha256 } from '@noble/hashes/sha2.js'
import { bytesToHex, concatBytes, hexToBytes, randomBytes, utf8ToBytes } from '@noble/hashes/utils.js'
import { fromBase64, toBase64 } from './encoding.js'
import { InvalidEnvelopeError, InvalidKeyError } from './errors.js'

/*
 * WalletConnect v2 crypto: X25519 key agreement, HKDF-SHA256 session keys, topics as the SHA-256
 * of a key, and ChaCha20-Poly1305 envelopes. Type 0 is `0x00 | iv | sealed`; type 1 (the first
 * message of a key agreement) is `0x01 | senderPublicKey | iv | sealed`; both base64 with padding.
 */

const KEY_LENGTH = 32
const IV_LENGTH = 12
const TAG_LENGTH = 16

export type EnvelopeType = 0 | 1

export type KeyPair = { privateKey: string; publicKey: string }

/**
 * A fresh X25519 key pair, hex encoded.
 *
 * @example
 * const { privateKey, publicKey } = generateKeyPair()
 */
export function generateKeyPair(): KeyPair {
  const privateKey = x25519.utils.randomPrivateKey()
  return { privateKey: bytesToHex(privateKey), publicKey: bytesToHex(x25519.getPublicKey(privateKey)) }
}

/**
 * 32 random bytes, hex: a pairing's symmetric key.
 *
 * @example
 * const symKey = generateSymKey()
 */
export function generateSymKey(): string {
  return bytesToHex(randomBytes(KEY_LENGTH))
}

/**
 * The symmetric key two peers share: HKDF-SHA256 over their X25519 shared secret.
 *
 * @example
 * const sessionKey = deriveSymKey(self.privateKey, peerPublicKey)
 */
export function deriveSymKey(privateKey: string, peerPublicKey: string): string {
  const shared = x25519.getSharedSecret(keyBytes(privateKey, 'private key'), keyBytes(peerPublicKey, 'public key'))
  return bytesToHex(hkdf(sha256, shared, undefined, undefined, KEY_LENGTH))
}

/**
 * The topic of a key: hex SHA-256 of its bytes.
 *
 * @example
 * const topic = topicOf(symKey)
 */
export function topicOf(symKey: string): string {
  return bytesToHex(sha256(keyBytes(symKey, 'symmetric key')))
}

export type EncryptParameters = {
  symKey: string
  message: string
  /** Default 0. Type 1 carries the sender's public key so the receiver can derive the key. */
  type?: EnvelopeType | undefined
  senderPublicKey?: string | undefined
  /** Only for tests with fixed vectors; otherwise random. */
  iv?: string | undefined
}

/**
 * Seals a message into a base64 envelope.
 *
 * @example
 * const envelope = encrypt({ symKey, message: JSON.stringify(payload) })
 */
export function encrypt({ symKey, message, type = 0, senderPublicKey, iv }: EncryptParameters): string {
  const nonce = iv === undefined ? randomBytes(IV_LENGTH) : hexToBytes(iv)
  if (nonce.length !== IV_LENGTH) throw new InvalidKeyError(`the iv must be ${IV_LENGTH} bytes`)
  const sealed = chacha20poly1305(keyBytes(symKey, 'symmetric key'), nonce).encrypt(utf8ToBytes(message))
  if (type === 1) {
    if (!senderPublicKey) throw new InvalidKeyError('a type 1 envelope needs the sender public key')
    return toBase64(concatBytes(Uint8Array.of(1), keyBytes(senderPublicKey, 'public key'), nonce, sealed))
  }
  return toBase64(concatBytes(Uint8Array.of(0), nonce, sealed))
}

export type DecodedEnvelope = { type: EnvelopeType; senderPublicKey: string | undefined; iv: Uint8Array; sealed: Uint8Array }

/**
 * Splits an envelope into its parts without decrypting it (to learn its type and sender key).
 *
 * @example
 * const { type, senderPublicKey } = decodeEnvelope(envelope)
 */
export function decodeEnvelope(envelope: string): DecodedEnvelope {
  let bytes: Uint8Array
  try {
    bytes = fromBase64(envelope)
  } catch (error) {
    throw new InvalidEnvelopeError('the envelope is not base64', error)
  }
  const type = bytes[0]
  if (type === 0) {
    if (bytes.length < 1 + IV_LENGTH + TAG_LENGTH) throw new InvalidEnvelopeError('a type 0 envelope is too short')
    return { type, senderPublicKey: undefined, iv: bytes.subarray(1, 1 + IV_LENGTH), sealed: bytes.subarray(1 + IV_LENGTH) }
  }
  if (type === 1) {
    const start = 1 + KEY_LENGTH
    if (bytes.length < start + IV_LENGTH + TAG_LENGTH) throw new InvalidEnvelopeError('a type 1 envelope is too short')
    return {
      type,
      senderPublicKey: bytesToHex(bytes.subarray(1, start)),
      iv: bytes.subarray(start, start + IV_LENGTH),
      sealed: bytes.subarray(start + IV_LENGTH),
    }
  }
  throw new InvalidEnvelopeError(`unknown envelope type ${String(type)}`)
}

/**
 * Opens an envelope. A wrong key or any change to the bytes fails authentication.
 *
 * @example
 * const message = decrypt({ symKey, envelope })
 */
export function decrypt({ symKey, envelope }: { symKey: string; envelope: string }): string {
  const { iv, sealed } = decodeEnvelope(envelope)
  try {
    return new TextDecoder('utf-8', { fatal: true }).decode(chacha20poly1305(keyBytes(symKey, 'symmetric key'), iv).decrypt(sealed))
  } catch (error) {
    throw new InvalidEnvelopeError('authentication failed: wrong key or altered message', error)
  }
}

function keyBytes(hex: string, what: string): Uint8Array {
  if (typeof hex !== 'string' || !/^[0-9a-f]{64}$/i.test(hex)) throw new InvalidKeyError(`the ${what} must be 32 bytes of hex`)
  return hexToBytes(hex)
}
