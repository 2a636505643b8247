// What the relay lets wait for one client: bytes its socket has not taken, pushes it has not
// acknowledged; and a stored backlog written no faster than the socket takes it.
import type { Socket } from 'node:net'
import type { RelayLimits } from './options.js'

export const DEFAULT_MAX_BUFFERED_BYTES = 4 * 1024 * 1024
export const DEFAULT_MAX_UNACKED_MESSAGES = 2_000
export const DEFAULT_MAX_UNACKED_BYTES = 32 * 1024 * 1024
/**
 * The least `maxBufferedBytes`: a paced backlog waits for 'drain' once half of it is buffered, and
 * Node emits 'drain' only after a write past the socket's high-water mark (16 KiB).
 */
const MIN_BUFFERED_BYTES = 64 * 1024
/** A push's frame beyond its message: the JSON-RPC envelope, two ids, the topic, numbers, the frame header. */
export const PUSH_FRAME_OVERHEAD = 512

export type OutboundLimits = { readonly maxBufferedBytes: number; readonly maxUnackedMessages: number; readonly maxUnackedBytes: number }

/**
 * The outbound limits, defaults filled in and checked: `maxBufferedBytes` holds at least two of the
 * largest messages, so a paced backlog (half of it at a time) never passes it.
 *
 * @example
 * const { maxBufferedBytes } = outboundLimits({}, 512 * 1024) // 4 MiB
 */
export function outboundLimits(limits: RelayLimits = {}, maxMessageBytes: number): OutboundLimits {
  const checked = {
    maxBufferedBytes: limits.maxBufferedBytes ?? Math.max(DEFAULT_MAX_BUFFERED_BYTES, 2 * maxMessageBytes),
    maxUnackedMessages: limits.maxUnackedMessages ?? DEFAULT_MAX_UNACKED_MESSAGES,
    maxUnackedBytes: limits.maxUnackedBytes ?? DEFAULT_MAX_UNACKED_BYTES,
  }
  for (const [name, value] of Object.entries(checked)) if (!Number.isSafeInteger(value) || value < 0) throw new RangeError(`${name} must be a whole number`)
  if (checked.maxBufferedBytes < Math.max(2 * maxMessageBytes, MIN_BUFFERED_BYTES))
    throw new RangeError(`maxBufferedBytes must be at least twice maxMessageBytes and at least ${MIN_BUFFERED_BYTES}`)
  return checked
}

/** What `paced` sends, and how. */
export type PacedWrite<item> = {
  /** The TCP socket the frames leave on. */
  tcp: Pick<Socket, 'writableLength' | 'writableNeedDrain' | 'once'>
  /** Bytes that may wait (in the socket's buffer and gathered) before the rest waits for 'drain'. */
  budget: number
  items: readonly item[]
  /** An item's frame in bytes, estimated. */
  sizeOf(item: item): number
  /** Gathers an item's frame. */
  send(item: item): void
  /** Writes the gathered frames to the socket. */
  writeOut(): void
  /** Whether to go on (the connection still open, the subscription still held). */
  open(): boolean
  /** Called once every item went, unless `open()` said no. */
  done(): void
}

/**
 * Sends items one by one, no faster than the socket takes them: once `budget` bytes wait, the
 * gathered frames are written and the rest follows the socket's 'drain'. A client that reads gets
 * all of them however many there are, and the relay holds about `budget` bytes for it, not the
 * whole backlog. One item always goes, so the most buffered is `budget` plus one item (or 16 KiB,
 * the socket's high-water mark, plus one item).
 *
 * @example
 * paced({ tcp, budget: 2 * 1024 * 1024, items: backlog, sizeOf, send: deliver, writeOut, open: isOpen, done: release })
 */
export function paced<item>(write: PacedWrite<item>) {
  const { tcp, budget, items } = write
  let index = 0
  const next = () => {
    let gathered = 0
    while (index < items.length) {
      if (!write.open()) return
      const item = items[index]!
      const size = write.sizeOf(item)
      if (gathered > 0 && tcp.writableLength + gathered + size > budget) {
        write.writeOut()
        gathered = 0
      }
      // The socket holds more than it takes at once (past its high-water mark): the rest waits
      // until it has taken it. Below the mark it holds under 16 KiB, and one more item goes.
      if (gathered === 0 && tcp.writableNeedDrain && tcp.writableLength + size > budget) return void tcp.once('drain', next)
      write.send(item)
      gathered += size
      index++
    }
    if (write.open()) write.done()
  }
  next()
}
