import { INVALID_REQUEST_CODE, type ReviewAndStampValue } from './consentMessages.js'
import { bytesToHex, concatBytes, FrameError, hexToBytes, utf8Encode } from './encoding.js'

// The stamp authorises the payload, not the picture: a page could show the user one request and
// ask for a stamp over another. So before anything is shown, the payload (the kms activity the
// stamp will authorise) must be exactly what the reviewed request needs. Each method is bound
// here as it becomes reviewable; any other is refused.

const unbound = (message: string) => new FrameError(message, INVALID_REQUEST_CODE)

/**
 * Throws unless `payload` is the kms activity that carries out `request` for `context.account`.
 *
 * @example
 * assertPayloadMatches({ request, payload, context }) // personal_sign: sign_raw_payload of its EIP-191 preimage, keccak256
 */
export function assertPayloadMatches({ request, payload, context }: ReviewAndStampValue): void {
  let body: unknown
  try {
    body = JSON.parse(payload)
  } catch {
    throw unbound('the payload is not a JSON kms request')
  }
  const activity = body as { type?: unknown; parameters?: Record<string, unknown> }
  if (typeof activity !== 'object' || activity === null || typeof activity.parameters !== 'object' || activity.parameters === null)
    throw unbound('the payload is not a kms activity')
  switch (request.method) {
    case 'personal_sign': {
      const [data] = request.params
      if (typeof data !== 'string') throw unbound('personal_sign needs the message as a string')
      // The kms hashes the EIP-191 preimage itself (keccak256), so it and its policies read the message.
      const { signWith, payload: preimage, encoding, hashFunction } = activity.parameters
      if (
        activity.type !== 'ACTIVITY_TYPE_SIGN_RAW_PAYLOAD_V2' ||
        encoding !== 'PAYLOAD_ENCODING_HEXADECIMAL' ||
        hashFunction !== 'HASH_FUNCTION_KECCAK256' ||
        typeof signWith !== 'string' ||
        signWith.toLowerCase() !== context.account.toLowerCase() ||
        typeof preimage !== 'string' ||
        preimage.replace(/^0x/, '').toLowerCase() !== eip191Preimage(data)
      )
        throw unbound('the payload does not sign this message with this account')
      return
    }
    default:
      throw unbound(`${request.method} cannot be stamped by this frame yet`)
  }
}

/** "\x19Ethereum Signed Message:\n" ‖ length ‖ message, hex without 0x; the message as personal_sign reads it. */
function eip191Preimage(data: string): string {
  const message = /^0x(?:[0-9a-fA-F]{2})*$/.test(data) ? hexToBytes(data) : utf8Encode(data)
  return bytesToHex(concatBytes(utf8Encode(`\x19Ethereum Signed Message:\n${message.length}`), message))
}
