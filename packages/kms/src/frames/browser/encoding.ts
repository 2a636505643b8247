import { sha256 } from '@noble/hashes/sha2'
import { createBase58check } from '@scure/base'

// Byte encodings the frames need: hex, unpadded base64url and base58check. The frames' scripts are
// bundled with their audited dependencies (@noble/*, @scure/base, @hpke/core) by src/frames/build.ts.

/**
 * An error whose message the frame may show and send to the parent page: it never holds a secret.
 * `code`, when set, is the EIP-1193 code the parent gets with it (4001: the user rejected).
 */
export class FrameError extends Error {
  override name = 'FrameError'
  constructor(
    message: string,
    readonly code?: number,
  ) {
    super(message)
  }
}

/** Bytes over a plain ArrayBuffer, the form WebCrypto takes. */
export type Bytes = Uint8Array<ArrayBuffer>

export const utf8Encode = (text: string): Bytes => new TextEncoder().encode(text) as Bytes
export const utf8Decode = (bytes: Uint8Array): string => new TextDecoder('utf-8', { fatal: true }).decode(bytes)

/** Lowercase or uppercase hex, with or without `0x`, to bytes. */
export function hexToBytes(hex: string, what = 'value'): Bytes {
  const clean = hex.startsWith('0x') ? hex.slice(2) : hex
  if (!/^(?:[0-9a-fA-F]{2})*$/.test(clean)) throw new FrameError(`${what} is not hexadecimal`)
  const bytes = new Uint8Array(clean.length / 2)
  for (let index = 0; index < bytes.length; index++) bytes[index] = Number.parseInt(clean.slice(index * 2, index * 2 + 2), 16)
  return bytes
}

export const bytesToHex = (bytes: Uint8Array): string => Array.from(bytes, (byte) => byte.toString(16).padStart(2, '0')).join('')

export function concatBytes(...parts: readonly Uint8Array[]): Bytes {
  const out = new Uint8Array(parts.reduce((sum, part) => sum + part.length, 0))
  let offset = 0
  for (const part of parts) {
    out.set(part, offset)
    offset += part.length
  }
  return out
}

/** Unpadded base64url, as `@turnkey/encoding` writes stamps. */
export function bytesToBase64url(bytes: Uint8Array): string {
  let binary = ''
  for (const byte of bytes) binary += String.fromCharCode(byte)
  return btoa(binary).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '')
}

const base58check = createBase58check(sha256)

/** Bitcoin-style base58check (@scure/base over @noble/hashes' SHA-256): the payload, after checking its checksum. */
export async function base58checkDecode(text: string): Promise<Bytes> {
  try {
    return concatBytes(base58check.decode(text))
  } catch (error) {
    throw new FrameError(error instanceof Error && /checksum/i.test(error.message) ? 'the bundle checksum does not match' : 'the bundle is not base58check')
  }
}
