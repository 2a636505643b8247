import type { NewMessage } from './store.js'

/**
 * How many bytes of stored messages a store holds at most, and how many messages a topic holds,
 * counted until each message expires (and a prune, at most a minute later, drops it). A message
 * counts its UTF-8 bytes plus `MESSAGE_OVERHEAD_BYTES`. 0 turns a quota off.
 */
export type StorageQuotas = {
  /** Over every topic and client. Default 1 GiB. */
  maxStoredBytes?: number | undefined
  /** On one topic. Default 16 MiB. */
  maxStoredBytesPerTopic?: number | undefined
  /** Published by one client id. Default 64 MiB. */
  maxStoredBytesPerClient?: number | undefined
  /**
   * Messages one topic holds, whatever their size: a subscribe or a fetch reads a topic's whole
   * backlog, so this bounds the work one of them takes. Default 1000.
   */
  maxStoredMessagesPerTopic?: number | undefined
}

/*
 * The defaults sit far above what WalletConnect traffic stores: its messages are a few KB (a
 * proposal or a request, encrypted) and most live minutes, so a busy session topic holds some
 * hundred KB; a client publishes to a handful of topics. The global budget bounds the memory the
 * local stores hold (they keep every message in memory) and Redis's.
 */
export const DEFAULT_MAX_STORED_BYTES = 1024 * 1024 * 1024
export const DEFAULT_MAX_STORED_BYTES_PER_TOPIC = 16 * 1024 * 1024
export const DEFAULT_MAX_STORED_BYTES_PER_CLIENT = 64 * 1024 * 1024
/** WalletConnect topics hold a handful of messages at a time (a proposal, a request, its response). */
export const DEFAULT_MAX_STORED_MESSAGES_PER_TOPIC = 1000

/**
 * What every stored message costs beyond its text, in the quotas of every store: what a store
 * holds besides it (ids, topic, publisher, numbers; on Redis the record's fields, the topic list's
 * entry, the expiry indexes), measured at about 300 bytes of heap a message in memory and 680 in
 * Redis. Without it a flood of tiny messages would take many times the quota in memory.
 */
export const MESSAGE_OVERHEAD_BYTES = 256

/** Which quota a publish would pass. */
export type QuotaScope = 'relay' | 'topic' | 'client' | 'topicMessages'

/** A publish refused because storing it would pass a quota: nothing of it is stored. */
export class QuotaExceededError extends Error {
  override name = 'QuotaExceededError'
  constructor(
    readonly scope: QuotaScope,
    readonly limit: number,
  ) {
    super(
      scope === 'relay'
        ? `Storage quota exceeded: the relay holds at most ${limit} bytes of messages`
        : scope === 'topic'
          ? `Storage quota exceeded: a topic holds at most ${limit} bytes of messages`
          : scope === 'client'
            ? `Storage quota exceeded: a client's messages take at most ${limit} bytes`
            : `Storage quota exceeded: a topic holds at most ${limit} messages`,
    )
  }
}

/** The limits, defaults filled in and checked: bytes (relay, topic, client) and a topic's messages. */
export type QuotaLimits = { readonly relay: number; readonly topic: number; readonly client: number; readonly topicMessages: number }

/** @internal */
export function quotaLimits(quotas: StorageQuotas = {}): QuotaLimits {
  const limits = {
    relay: quotas.maxStoredBytes ?? DEFAULT_MAX_STORED_BYTES,
    topic: quotas.maxStoredBytesPerTopic ?? DEFAULT_MAX_STORED_BYTES_PER_TOPIC,
    client: quotas.maxStoredBytesPerClient ?? DEFAULT_MAX_STORED_BYTES_PER_CLIENT,
    topicMessages: quotas.maxStoredMessagesPerTopic ?? DEFAULT_MAX_STORED_MESSAGES_PER_TOPIC,
  }
  for (const [name, value] of Object.entries(limits))
    if (!Number.isSafeInteger(value) || value < 0)
      throw new RangeError(`the ${name} storage quota must be a whole number of ${name === 'topicMessages' ? 'messages' : 'bytes'}, 0 for none`)
  return limits
}

/** A message's size as quotas count it: its UTF-8 bytes (a `jsonSafe` message is ASCII: its length) and the overhead. */
export const storedSize = (message: Pick<NewMessage, 'message' | 'jsonSafe'>) =>
  (message.jsonSafe ? message.message.length : Buffer.byteLength(message.message)) + MESSAGE_OVERHEAD_BYTES

/**
 * What a local store (memory, SQLite) holds, by topic and by publisher, against its quotas: two
 * map lookups and three additions a message, no object made for one.
 *
 * @internal
 */
export class QuotaUsage {
  readonly #limits: QuotaLimits
  readonly #off: boolean
  #relay = 0
  readonly #topics = new Map<string, number>()
  readonly #clients = new Map<string, number>()
  /** Messages by topic. */
  readonly #counts = new Map<string, number>()
  constructor(limits: QuotaLimits) {
    this.#limits = limits
    this.#off = limits.relay === 0 && limits.topic === 0 && limits.client === 0 && limits.topicMessages === 0
  }

  /** The quota one more message of `size` bytes would pass, or undefined when it fits. */
  exceeded(topic: string, publisher: string, size: number): QuotaExceededError | undefined {
    const limits = this.#limits
    if (limits.relay && this.#relay + size > limits.relay) return new QuotaExceededError('relay', limits.relay)
    if (limits.topic && (this.#topics.get(topic) ?? 0) + size > limits.topic) return new QuotaExceededError('topic', limits.topic)
    if (limits.client && (this.#clients.get(publisher) ?? 0) + size > limits.client) return new QuotaExceededError('client', limits.client)
    if (limits.topicMessages && (this.#counts.get(topic) ?? 0) + 1 > limits.topicMessages) return new QuotaExceededError('topicMessages', limits.topicMessages)
    return undefined
  }

  /**
   * Whether messages fit together, counted as if each were stored (a batch is stored whole or not
   * at all): throws the quota the first one that does not fit passes. One `held` already, or
   * earlier in the batch, is stored once and counts nothing.
   */
  check(messages: readonly NewMessage[], held: (id: string) => boolean) {
    if (this.#off) return
    const topics = new Map<string, number>()
    const clients = new Map<string, number>()
    const counts = new Map<string, number>()
    const seen = new Set<string>()
    let relay = 0
    for (const message of messages) {
      if (held(message.id) || seen.has(message.id)) continue
      seen.add(message.id)
      const size = storedSize(message)
      const topic = (topics.get(message.topic) ?? 0) + size
      const client = (clients.get(message.publisher) ?? 0) + size
      const count = (counts.get(message.topic) ?? 0) + 1
      relay += size
      const limits = this.#limits
      if (limits.relay && this.#relay + relay > limits.relay) throw new QuotaExceededError('relay', limits.relay)
      if (limits.topic && (this.#topics.get(message.topic) ?? 0) + topic > limits.topic) throw new QuotaExceededError('topic', limits.topic)
      if (limits.client && (this.#clients.get(message.publisher) ?? 0) + client > limits.client) throw new QuotaExceededError('client', limits.client)
      if (limits.topicMessages && (this.#counts.get(message.topic) ?? 0) + count > limits.topicMessages)
        throw new QuotaExceededError('topicMessages', limits.topicMessages)
      topics.set(message.topic, topic)
      clients.set(message.publisher, client)
      counts.set(message.topic, count)
    }
  }

  /** Counts a stored message; throws, counting nothing, when it does not fit and `enforce`. */
  add(message: NewMessage, enforce: boolean) {
    if (this.#off) return
    const size = storedSize(message)
    if (enforce) {
      const refusal = this.exceeded(message.topic, message.publisher, size)
      if (refusal) throw refusal
    }
    this.#relay += size
    this.#topics.set(message.topic, (this.#topics.get(message.topic) ?? 0) + size)
    this.#clients.set(message.publisher, (this.#clients.get(message.publisher) ?? 0) + size)
    this.#counts.set(message.topic, (this.#counts.get(message.topic) ?? 0) + 1)
  }

  /** Stops counting a message that expired or was not stored. */
  remove(message: NewMessage) {
    if (this.#off) return
    const size = storedSize(message)
    this.#relay -= size
    drop(this.#topics, message.topic, size)
    drop(this.#clients, message.publisher, size)
    drop(this.#counts, message.topic, 1)
  }

  clear() {
    this.#relay = 0
    this.#topics.clear()
    this.#clients.clear()
    this.#counts.clear()
  }

  /** Bytes counted, for tests. */
  stored(): number {
    return this.#relay
  }
}

function drop(counts: Map<string, number>, key: string, size: number) {
  const left = (counts.get(key) ?? 0) - size
  if (left > 0) counts.set(key, left)
  else counts.delete(key)
}
