import { createHmac } from 'node:crypto'

// RFC 6238 codes for the tests that enrol a second factor in the kms (SHA-1, 6 digits, 30 s, as
// the kms's factors are), written here so the backend's tests need no TOTP library.

/** The bytes of an RFC 4648 base32 text (no padding), as the kms answers a TOTP secret. */
function base32Bytes(text: string): Buffer {
  let bits = ''
  for (const char of text) bits += 'ABCDEFGHIJKLMNOPQRSTUVWXYZ234567'.indexOf(char).toString(2).padStart(5, '0')
  return Buffer.from(bits.match(/.{8}/g)!.map((byte) => Number.parseInt(byte, 2)))
}

/** The 6-digit code of `secret` (base32) at `atMs`. */
export function totp(secret: string, atMs: number): string {
  const counter = Buffer.alloc(8)
  counter.writeBigUInt64BE(BigInt(Math.floor(atMs / 1000 / 30)))
  const mac = createHmac('sha1', base32Bytes(secret)).update(counter).digest()
  const offset = mac[mac.length - 1]! & 0x0f
  return String((mac.readUInt32BE(offset) & 0x7fffffff) % 1_000_000).padStart(6, '0')
}
