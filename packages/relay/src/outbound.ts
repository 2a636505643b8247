// What the relay lets wait for one client: bytes its socket has not taken, pushes it has not
// acknowledged; and a stored backlog written no faster than the socket takes it.
import type { Socket } from 'node:net'
import type { RelayLimits } from './options.js'

export const DEFAULT_MAX_BUFFERED_BYTES = 4 * 1024 * 1024
export const DEFAULT_MAX_UNACKED_MESSAGES = 2_000
export const DEFAULT_MAX_UNACKED_BYTES = 32 * 1024 * 1024
/** Unread bytes one address's connections may hold together: 16 connections at `maxBufferedBytes`. */
export const DEFAULT_MAX_BUFFERED_BYTES_PER_IP = 64 * 1024 * 1024
/** Unread bytes every connection may hold together. */
export const DEFAULT_MAX_BUFFERED_BYTES_TOTAL = 1024 * 1024 * 1024
/**
 * Node's default high-water mark of a socket: below it a write returns true and the bytes are
 * about to leave, so a connection holding fewer is not counted in the unread budget.
 */
const HIGH_WATER_MARK = 16 * 1024
/**
 * The least `maxBufferedBytes`: a paced backlog waits for 'drain' once half of it is buffered, and
 * Node emits 'drain' only after a write past the socket's high-water mark (16 KiB).
 */
const MIN_BUFFERED_BYTES = 64 * 1024
/** A push's frame beyond its message: the JSON-RPC envelope, two ids, the topic, numbers, the frame header. */
export const PUSH_FRAME_OVERHEAD = 512

export type OutboundLimits = {
  readonly maxBufferedBytes: number
  readonly maxBufferedBytesPerIp: number
  readonly maxBufferedBytesTotal: number
  readonly maxUnackedMessages: number
  readonly maxUnackedBytes: number
}

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
    maxBufferedBytesPerIp: limits.maxBufferedBytesPerIp ?? DEFAULT_MAX_BUFFERED_BYTES_PER_IP,
    maxBufferedBytesTotal: limits.maxBufferedBytesTotal ?? DEFAULT_MAX_BUFFERED_BYTES_TOTAL,
    maxUnackedMessages: limits.maxUnackedMessages ?? DEFAULT_MAX_UNACKED_MESSAGES,
    maxUnackedBytes: limits.maxUnackedBytes ?? DEFAULT_MAX_UNACKED_BYTES,
  }
  for (const [name, value] of Object.entries(checked)) if (!Number.isSafeInteger(value) || value < 0) throw new RangeError(`${name} must be a whole number`)
  if (checked.maxBufferedBytes < Math.max(2 * maxMessageBytes, MIN_BUFFERED_BYTES))
    throw new RangeError(`maxBufferedBytes must be at least twice maxMessageBytes and at least ${MIN_BUFFERED_BYTES}`)
  // One connection's paced backlog may hold maxBufferedBytes; a smaller shared cap would close a client that reads.
  for (const name of ['maxBufferedBytesPerIp', 'maxBufferedBytesTotal'] as const)
    if (checked[name] > 0 && checked[name] < checked.maxBufferedBytes) throw new RangeError(`${name} must be 0 (no cap) or at least maxBufferedBytes`)
  return checked
}

/** What the unread budget knows of a connection: its address, its socket, what it has counted. */
export type UnreadEntry = { address: string; unread: number; tcp: Pick<Socket, 'writableLength' | 'writableNeedDrain'> }

/**
 * The unread bytes of every connection together, and of each address's (security review 2, R1: one
 * address may open `maxConnectionsPerIp` connections, each holding `maxBufferedBytes`). A
 * connection counts what its socket holds once a write has passed the high-water mark, until
 * 'drain': below the mark the bytes are leaving and are not counted, so a client that reads is
 * never charged for another's backlog. Counted as a number per write, not looked up per frame.
 *
 * @example
 * const budget = unreadBudget({ maxBufferedBytesPerIp: 64 << 20, maxBufferedBytesTotal: 1 << 30 })
 * const over = budget.over(connection, waiting) // 'from your address', or undefined
 */
export function unreadBudget(limits: Pick<OutboundLimits, 'maxBufferedBytesPerIp' | 'maxBufferedBytesTotal'>) {
  const byAddress = new Map<string, number>()
  let total = 0
  /** Sets what `entry` counts to `bytes`. */
  const count = (entry: UnreadEntry, bytes: number) => {
    const change = bytes - entry.unread
    if (change === 0) return
    entry.unread = bytes
    total += change
    const left = (byAddress.get(entry.address) ?? 0) + change
    if (left > 0) byAddress.set(entry.address, left)
    else byAddress.delete(entry.address)
  }
  return {
    /**
     * Why `waiting` bytes (its socket's and the frames about to be written) would take `entry` past
     * a shared cap, or undefined. Nothing is counted.
     */
    over(entry: UnreadEntry, waiting: number): string | undefined {
      if (waiting <= HIGH_WATER_MARK) return undefined
      const { maxBufferedBytesPerIp: perIp, maxBufferedBytesTotal: all } = limits
      if (perIp > 0 && (byAddress.get(entry.address) ?? 0) - entry.unread + waiting > perIp) return 'too many bytes unread from your address'
      if (all > 0 && total - entry.unread + waiting > all) return 'too many bytes unread on this relay'
      return undefined
    },
    /** After a write: what `entry`'s socket holds counts if the write passed the high-water mark. */
    wrote(entry: UnreadEntry) {
      count(entry, entry.tcp.writableNeedDrain ? entry.tcp.writableLength : 0)
    },
    /** Its socket drained, or it closed: `entry` counts nothing. */
    clear(entry: UnreadEntry) {
      count(entry, 0)
    },
    /** Bytes counted in all, for tests and metrics. */
    total: () => total,
  }
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
