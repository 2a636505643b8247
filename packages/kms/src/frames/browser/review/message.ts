import { en } from '../i18n/en.js'
import { ReviewError } from './errors.js'
import { sameAddress, toAddress } from './format.js'
import { reviewSiwe } from './siwe.js'
import type { Review, ReviewContext } from './types.js'
import { hiddenCharacters, notText } from './warnings.js'

// personal_sign: the message as the text it is. Bytes that are not UTF-8 are shown as hex with a
// warning (they may be a hash or a transaction in disguise); a SIWE message gets its own rows.

const fail = (reason: string) => new ReviewError('MALFORMED_MESSAGE', reason)

// Zero-width and direction-changing characters make the text read otherwise than it is signed.
const HIDDEN = /[\u200B-\u200F\u202A-\u202E\u2060-\u2064\u2066-\u2069\uFEFF]/gu
const reveal = (text: string) => text.replace(HIDDEN, (character) => `<U+${character.codePointAt(0)!.toString(16).toUpperCase().padStart(4, '0')}>`)

function messageBytes(message: string): Uint8Array | undefined {
  if (!/^0x(?:[0-9a-fA-F]{2})*$/.test(message)) return undefined
  const bytes = new Uint8Array((message.length - 2) / 2)
  for (let index = 0; index < bytes.length; index++) bytes[index] = Number.parseInt(message.slice(2 + index * 2, 4 + index * 2), 16)
  return bytes
}

/**
 * The review of `personal_sign` (params: [message, address]; the message hex-encoded as EIP-1193
 * says, or plain text as some apps send it).
 *
 * @example
 * reviewMessage(['0x68656c6c6f', account], context).rows // [{ label: 'Message', value: 'hello' }]
 */
export function reviewMessage(params: readonly unknown[], context: ReviewContext): Review {
  const [message, address] = params
  if (typeof message !== 'string') throw fail('The message is not a string')
  if (address !== undefined) {
    const signer = toAddress(address)
    if (!signer || !sameAddress(signer, context.account))
      throw fail(`The message is to be signed by ${String(address)}, not by this wallet's account ${context.account}`)
  }
  const bytes = messageBytes(message)
  let text: string | undefined = message
  if (bytes) {
    try {
      text = new TextDecoder('utf-8', { fatal: true }).decode(bytes)
    } catch {
      text = undefined
    }
  }
  const base = { kind: 'message' as const, origin: context.origin }
  if (text === undefined)
    return { ...base, title: en.titleMessage, rows: [{ label: en.rowMessageHex, value: message.toLowerCase() }], raw: message, warnings: [notText] }
  const siwe = reviewSiwe(text, context)
  if (siwe) return { ...base, title: en.titleSiwe, rows: siwe.rows, raw: text, warnings: siwe.warnings }
  const shown = reveal(text)
  return { ...base, title: en.titleMessage, rows: [{ label: en.rowMessage, value: shown }], raw: text, warnings: shown === text ? [] : [hiddenCharacters] }
}
