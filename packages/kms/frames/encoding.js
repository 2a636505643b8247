// Generated from src/frames/browser/encoding.ts by `npm run build:frames -w @latchkey/kms`. Do not edit.
// Byte encodings the frames need: hex, unpadded base64url and base58check. Like all of
// src/frames/browser, browser code with no dependencies (packages/kms/README.md, "Frames").
/** An error whose message the frame may show and send to the parent page: it never holds a secret. */
export class FrameError extends Error {
    name = 'FrameError';
}
export const utf8Encode = (text) => new TextEncoder().encode(text);
export const utf8Decode = (bytes) => new TextDecoder('utf-8', { fatal: true }).decode(bytes);
/** Lowercase or uppercase hex, with or without `0x`, to bytes. */
export function hexToBytes(hex, what = 'value') {
    const clean = hex.startsWith('0x') ? hex.slice(2) : hex;
    if (!/^(?:[0-9a-fA-F]{2})*$/.test(clean))
        throw new FrameError(`${what} is not hexadecimal`);
    const bytes = new Uint8Array(clean.length / 2);
    for (let index = 0; index < bytes.length; index++)
        bytes[index] = Number.parseInt(clean.slice(index * 2, index * 2 + 2), 16);
    return bytes;
}
export const bytesToHex = (bytes) => Array.from(bytes, (byte) => byte.toString(16).padStart(2, '0')).join('');
export function concatBytes(...parts) {
    const out = new Uint8Array(parts.reduce((sum, part) => sum + part.length, 0));
    let offset = 0;
    for (const part of parts) {
        out.set(part, offset);
        offset += part.length;
    }
    return out;
}
/** Unpadded base64url, as `@turnkey/encoding` writes stamps. */
export function bytesToBase64url(bytes) {
    let binary = '';
    for (const byte of bytes)
        binary += String.fromCharCode(byte);
    return btoa(binary).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
}
const BASE58 = '123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz';
/** Bitcoin-style base58check: the payload, after checking its 4-byte double-SHA-256 checksum. */
export async function base58checkDecode(text) {
    let value = 0n;
    for (const char of text) {
        const digit = BASE58.indexOf(char);
        if (digit < 0)
            throw new FrameError('the bundle is not base58check');
        value = value * 58n + BigInt(digit);
    }
    const body = [];
    for (; value > 0n; value >>= 8n)
        body.unshift(Number(value & 0xffn));
    const leadingZeros = /^1*/.exec(text)?.[0].length ?? 0;
    const bytes = concatBytes(new Uint8Array(leadingZeros), Uint8Array.from(body));
    if (bytes.length < 4)
        throw new FrameError('the bundle is not base58check');
    const payload = bytes.slice(0, -4);
    const once = await crypto.subtle.digest('SHA-256', payload);
    const checksum = new Uint8Array(await crypto.subtle.digest('SHA-256', once)).subarray(0, 4);
    if (!checksum.every((byte, index) => byte === bytes[bytes.length - 4 + index]))
        throw new FrameError('the bundle checksum does not match');
    return payload;
}
