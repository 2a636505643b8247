// The frames the relay writes itself: pushes assembled from their parts, and a turn's frames as
// one buffer of RFC 6455 text frames (the hot path; see server.ts's `send`).
import { integerLength, messageJsonBytes, writeInteger, writeMessageJson } from './bytes.js'
import type { StoredMessage } from './store.js'

/**
 * A push, written into the outgoing buffer part by part: our keys from constant bytes, ids and
 * numbers as the relay holds them, and the message, most of the frame, as it is held. `text` is the
 * message between quotes when `quoted` (it is `JSON_SAFE`: base64, hex), else as JSON text already
 * (escaped here, or as a store holds it). The ids and the topic are hex: their length is their size.
 */
export class Push {
  constructor(
    readonly id: number,
    readonly subscription: string,
    readonly message: StoredMessage,
    readonly text: string,
    readonly quoted: boolean,
  ) {}
}

/** The constant parts of a push's frame, around its id, subscription id, topic, message, publishedAt and tag. */
const PUSH_PARTS = [
  '{"id":',
  ',"jsonrpc":"2.0","method":"irn_subscription","params":{"id":"',
  '","data":{"topic":"',
  '","message":',
  ',"publishedAt":',
  ',"tag":',
  ',"attestation":""}}}',
].map((part) => Buffer.from(part))
const [PUSH_ID, PUSH_SUBSCRIPTION, PUSH_TOPIC, PUSH_MESSAGE, PUSH_PUBLISHED_AT, PUSH_TAG, PUSH_END] = PUSH_PARTS as [
  Buffer,
  Buffer,
  Buffer,
  Buffer,
  Buffer,
  Buffer,
  Buffer,
]
const PUSH_CONSTANT_BYTES = PUSH_PARTS.reduce((sum, part) => sum + part.length, 0)

export const pushLength = (push: Push) =>
  PUSH_CONSTANT_BYTES +
  integerLength(push.id) +
  push.subscription.length +
  push.message.topic.length +
  (push.quoted ? messageJsonBytes(push.text, true) : Buffer.byteLength(push.text)) +
  integerLength(push.message.publishedAt) +
  integerLength(push.message.tag)

/** Writes a push's frame payload at `at`; answers where it ends. */
export function writePush(buffer: Buffer, at: number, push: Push): number {
  const { message } = push
  buffer.set(PUSH_ID, at)
  at = writeInteger(buffer, at + PUSH_ID.length, push.id)
  buffer.set(PUSH_SUBSCRIPTION, at)
  at += PUSH_SUBSCRIPTION.length
  at += buffer.write(push.subscription, at, 'latin1')
  buffer.set(PUSH_TOPIC, at)
  at += PUSH_TOPIC.length
  at += buffer.write(message.topic, at, 'latin1')
  buffer.set(PUSH_MESSAGE, at)
  at += PUSH_MESSAGE.length
  at = push.quoted ? writeMessageJson(buffer, at, push.text, true) : at + buffer.write(push.text, at)
  buffer.set(PUSH_PUBLISHED_AT, at)
  at = writeInteger(buffer, at + PUSH_PUBLISHED_AT.length, message.publishedAt)
  buffer.set(PUSH_TAG, at)
  at = writeInteger(buffer, at + PUSH_TAG.length, message.tag)
  buffer.set(PUSH_END, at)
  return at + PUSH_END.length
}

/**
 * Frames as one buffer of unmasked RFC 6455 text frames (a server's frames are unmasked, and the
 * relay negotiates no extension), each with its length in its shortest form. `lengths` is scratch
 * space kept from one call to the next.
 */
export function textFrames(frames: readonly (string | Push)[], lengths: number[]): Buffer {
  let size = 0
  for (let index = 0; index < frames.length; index++) {
    const frame = frames[index]!
    const length = typeof frame === 'string' ? Buffer.byteLength(frame) : pushLength(frame)
    lengths[index] = length
    size += length + (length < 126 ? 2 : length < 65_536 ? 4 : 10)
  }
  const buffer = Buffer.allocUnsafe(size)
  let at = 0
  for (let index = 0; index < frames.length; index++) {
    // FIN and the text opcode, then the length in its shortest form.
    buffer[at] = 0x81
    const length = lengths[index]!
    if (length < 126) {
      buffer[at + 1] = length
      at += 2
    } else if (length < 65_536) {
      buffer[at + 1] = 126
      buffer.writeUInt16BE(length, at + 2)
      at += 4
    } else {
      buffer[at + 1] = 127
      buffer.writeBigUInt64BE(BigInt(length), at + 2)
      at += 10
    }
    const frame = frames[index]!
    if (typeof frame === 'string') at += buffer.write(frame, at)
    else at = writePush(buffer, at, frame)
  }
  return buffer
}
