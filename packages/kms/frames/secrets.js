// Generated from src/frames/browser/secrets.ts by `npm run build:frames -w @latchkey/kms`. Do not edit.
import { FrameError, hexToBytes, utf8Encode } from './encoding.js';
// The secrets the export frame shows and the import frame reads, in the formats the kms uses:
// BIP-39 English phrases and Ethereum-style private keys (64 hexadecimal digits).
/** The key formats of `@turnkey/iframe-stamper` that these frames support. */
export const KEY_FORMATS = ['HEXADECIMAL'];
/** Checks a request's `keyFormat` (absent means HEXADECIMAL, as in the hosted frames). */
export function keyFormatOf(value) {
    if (value === undefined || value === null || value === 'HEXADECIMAL')
        return 'HEXADECIMAL';
    throw new FrameError(`key format ${JSON.stringify(value).slice(0, 40)} is not supported: these frames use HEXADECIMAL keys`);
}
/** A typed secret recovery phrase, trimmed, lowercased and single-spaced; its checksum is the kms's to check. */
export function parseMnemonic(text) {
    const words = text.trim().toLowerCase().split(/\s+/).filter(Boolean);
    if (![12, 15, 18, 21, 24].includes(words.length))
        throw new FrameError('a secret recovery phrase has 12, 15, 18, 21 or 24 words');
    if (!words.every((word) => /^[a-z]{3,8}$/.test(word)))
        throw new FrameError('a secret recovery phrase has only English BIP-39 words');
    return utf8Encode(words.join(' '));
}
/** A typed private key (64 hexadecimal digits, `0x` optional) as its 32 bytes. */
export function parsePrivateKey(text) {
    const clean = text.trim();
    if (!/^(?:0x)?[0-9a-fA-F]{64}$/.test(clean))
        throw new FrameError('a private key is 64 hexadecimal characters');
    return hexToBytes(clean);
}
