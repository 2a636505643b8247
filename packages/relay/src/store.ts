/** A message as the relay keeps it until its TTL runs out. */
export type StoredMessage = {
  /** sha256(topic ‖ message), hex: publishing the same message twice stores it once. */
  readonly id: string
  readonly topic: string
  readonly message: string
  readonly tag: number
  /** Unix ms. */
  readonly publishedAt: number
  /** Unix ms. */
  readonly expiresAt: number
  /** Client id of the publisher, so it never gets its own message back. */
  readonly publisher: string
}

/**
 * Where the relay keeps messages and acknowledgements. Async so that SQLite and Redis stores
 * share the shape; every store passes the same suite.
 */
export type RelayStore = {
  /** Stores a message; false when the same message is already stored on its topic. */
  add(message: StoredMessage): Promise<boolean>
  /** Unexpired messages of a topic, in publish order. */
  list(topic: string, now: number): Promise<readonly StoredMessage[]>
  ack(clientId: string, messageId: string): Promise<void>
  isAcked(clientId: string, messageId: string): Promise<boolean>
  /** Drops expired messages and their acknowledgements. */
  prune(now: number): Promise<void>
  /**
   * For stores that several relay nodes share (Redis): calls `listener` with each message another
   * node stored, so this node pushes it to its own subscribers. Resolves once listening; the
   * returned function stops it.
   */
  watch?(listener: (message: StoredMessage) => void): Promise<() => Promise<void>>
  close(): Promise<void>
}

/**
 * A store in process memory: fast, and gone when the relay stops.
 *
 * @example
 * const relay = createRelay({ port: 5555, store: memoryStore() })
 */
export function memoryStore(): RelayStore {
  const byTopic = new Map<string, StoredMessage[]>()
  const ids = new Set<string>()
  const acks = new Map<string, Set<string>>()
  return {
    async add(message) {
      if (ids.has(message.id)) return false
      ids.add(message.id)
      const list = byTopic.get(message.topic) ?? []
      list.push(message)
      byTopic.set(message.topic, list)
      return true
    },
    async list(topic, now) {
      return (byTopic.get(topic) ?? []).filter((m) => m.expiresAt > now)
    },
    async ack(clientId, messageId) {
      const set = acks.get(messageId) ?? new Set()
      set.add(clientId)
      acks.set(messageId, set)
    },
    async isAcked(clientId, messageId) {
      return acks.get(messageId)?.has(clientId) ?? false
    },
    async prune(now) {
      for (const [topic, list] of byTopic) {
        const kept = list.filter((m) => m.expiresAt > now)
        for (const m of list) if (m.expiresAt <= now) (ids.delete(m.id), acks.delete(m.id))
        if (kept.length) byTopic.set(topic, kept)
        else byTopic.delete(topic)
      }
    },
    async close() {
      byTopic.clear()
      ids.clear()
      acks.clear()
    },
  }
}
