import { QuotaUsage, quotaLimits, type StorageQuotas } from './quota.js'

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
  /**
   * Its place in the store, given by the store when it is added: larger for every later message,
   * on every node sharing the store. A connection is sent a topic's messages in this order, each
   * once, whether they come from the stored backlog or live.
   */
  readonly seq: number
  /**
   * `message` is printable ASCII without a quote or a backslash (`JSON_SAFE`, as base64 is): it goes
   * into JSON between quotes as it is. Undefined where nobody tested it.
   */
  readonly jsonSafe?: boolean | undefined
  /**
   * `message` as a JSON string, when the store holds it that way (Redis notices): the relay pushes
   * it as it is instead of serialising `message` again.
   */
  readonly json?: string | undefined
}

/** A message as the relay hands it to the store, before the store gives it its `seq`. */
export type NewMessage = Omit<StoredMessage, 'seq' | 'json'>

/**
 * Where the relay keeps messages and acknowledgements. Async so that SQLite and Redis stores
 * share the shape; every store passes the same suite.
 */
export type RelayStore = {
  /**
   * Stores a message and answers it with its `seq`; undefined when the same message is already
   * stored on its topic (answered once that copy is stored). The relay calls it again before
   * earlier calls settle: the order of the calls is the publish order, and the answers come in it.
   */
  add(message: NewMessage): Promise<StoredMessage | undefined>
  /**
   * For stores of one node that commit in batches (SQLite, memory): `add`, answered at once with
   * what `add` would resolve to (`added`) and the promise of the commit that holds it (or holds the
   * copy already stored), which many calls share. The relay then follows one promise per commit
   * rather than one per message. Must not be given by a store that `watch`es.
   */
  addToBatch?(message: NewMessage): { added: StoredMessage | undefined; committed: Promise<void> }
  /**
   * Throws a `QuotaExceededError` when these messages, stored together, would pass a storage
   * quota; stores nothing. The relay asks before a publish of several messages, so that a batch is
   * stored whole or not at all. (`add` refuses a message past a quota all the same.)
   */
  checkQuota?(messages: readonly NewMessage[]): void
  /**
   * Stores the messages of one publish, in order, whole or not at all: rejects with a
   * `QuotaExceededError`, having stored and counted none, when together they would pass a storage
   * quota; else answers what `add` would for each. For stores that check quotas only where they
   * store (Redis, whose counts every node shares): the relay uses it for a publish of several
   * messages instead of `add` for each.
   */
  addAll?(messages: readonly NewMessage[]): Promise<(StoredMessage | undefined)[]>
  /** Unexpired messages of a topic, in publish order. */
  list(topic: string, now: number): Promise<readonly StoredMessage[]>
  /**
   * Records that `clientId` acknowledged the message. `expiresAt` (the message's) and `now` are
   * given where the relay has them at hand: a store may then keep the ack as long as the message
   * without looking the message up. `held` is the message as this store answered it (from `add`,
   * `addToBatch` or `list`), where the relay holds it: a local store may record the ack on it
   * instead of finding it by id.
   */
  ack(clientId: string, messageId: string, expiresAt?: number, now?: number, held?: StoredMessage): Promise<void>
  isAcked(clientId: string, messageId: string): Promise<boolean>
  /** Drops expired messages and their acknowledgements. */
  prune(now: number): Promise<void>
  /**
   * For stores that several relay nodes share (Redis): calls `listener` with each message stored,
   * by any node including this one, in `seq` order, so every node pushes it to its own subscribers
   * from one ordered stream. A relay on such a store pushes nothing straight from `add`. Resolves
   * once listening; the returned function stops it. `wants` says whether this node would send a
   * message of `topic` from `publisher` to anyone: messages it would not may be skipped unread.
   */
  watch?(listener: (message: StoredMessage) => void, options?: { wants?(topic: string, publisher: string): boolean }): Promise<() => Promise<void>>
  /**
   * For stores several relay nodes share: adds `count` requests of `clientId` to the second holding
   * `now` (unix ms), over every node, and answers that second's count so far, these included.
   * Calls made within one turn may share a round trip. Without it, each node counts its own.
   */
  countRequests?(clientId: string, now: number, count: number): Promise<number>
  /** Resolves when the store answers (a query, a PING), rejects otherwise: the relay's `GET /readyz`. */
  ping?(): Promise<void>
  close(): Promise<void>
}

/** A stored message from a new one and its `seq`, written out: a spread with an added key costs V8 a microsecond a message. */
export const withSeq = (added: NewMessage, seq: number, topic = added.topic): StoredMessage => ({
  id: added.id,
  topic,
  message: added.message,
  tag: added.tag,
  publishedAt: added.publishedAt,
  expiresAt: added.expiresAt,
  publisher: added.publisher,
  seq,
  jsonSafe: added.jsonSafe,
})

/** @internal The in-memory state every local store keeps; synchronous, so others can build on it. */
export type MemoryIndex = {
  /**
   * The message with its `seq`; undefined when the id is already held. `seq` is given when the
   * message is read back from a file, in order; later messages are numbered after it. Throws a
   * `QuotaExceededError`, holding nothing, when it would pass a storage quota, unless `restoring`
   * (read back from a file: stored before, counted but never refused).
   */
  add(message: NewMessage, seq?: number, restoring?: boolean): StoredMessage | undefined
  /** See `RelayStore.checkQuota`. */
  checkQuota(messages: readonly NewMessage[]): void
  /** Forgets a message that could not be persisted. */
  remove(message: NewMessage): void
  list(topic: string, now: number): StoredMessage[]
  /** The message's expiry, if it is held. */
  expiryOf(messageId: string): number | undefined
  /**
   * Records the ack and answers the message's expiry; undefined, recording nothing, for a message
   * not held or already acknowledged by that client. `held`, the message as this index answered
   * it, is used instead of a lookup while the index still holds it.
   */
  ack(clientId: string, messageId: string, held?: StoredMessage): number | undefined
  isAcked(clientId: string, messageId: string): boolean
  prune(now: number): void
  clear(): void
}

/** @internal */
export function memoryIndex(quotas?: StorageQuotas): MemoryIndex {
  const usage = new QuotaUsage(quotaLimits(quotas))
  const byTopic = new Map<string, HeldMessage[]>()
  const byId = new Map<string, HeldMessage>()
  // What its messages point to while it holds them: a message handed back is known as its own.
  const holder = {}
  let seq = 0
  return {
    add(added, given, restoring) {
      if (byId.has(added.id)) return undefined
      usage.add(added, !restoring && given === undefined)
      seq = given === undefined ? seq + 1 : Math.max(seq, given)
      const list = byTopic.get(added.topic)
      // Each publish parses its own copy of the topic; the messages of a topic share the first one's.
      const message = new HeldMessage(added, given ?? seq, list?.length ? list[0]!.topic : added.topic, holder)
      byId.set(message.id, message)
      if (list) list.push(message)
      else byTopic.set(message.topic, [message])
      return message
    },
    checkQuota: (messages) => usage.check(messages, (id) => byId.has(id)),
    remove(message) {
      const held = byId.get(message.id)
      if (held) usage.remove(held)
      HeldMessage.forget(held)
      byId.delete(message.id)
      const kept = (byTopic.get(message.topic) ?? []).filter((m) => m.id !== message.id)
      if (kept.length) byTopic.set(message.topic, kept)
      else byTopic.delete(message.topic)
    },
    list: (topic, now) => (byTopic.get(topic) ?? []).filter((m) => m.expiresAt > now),
    expiryOf: (messageId) => byId.get(messageId)?.expiresAt,
    // An ack for a message no longer held (expired between push and ack) has nothing to protect.
    ack: (clientId, messageId, held) => HeldMessage.ack((held?.id === messageId && HeldMessage.heldBy(held, holder)) || byId.get(messageId), clientId),
    isAcked: (clientId, messageId) => HeldMessage.isAcked(byId.get(messageId), clientId),
    prune(now) {
      for (const [topic, list] of byTopic) {
        const kept = list.filter((m) => m.expiresAt > now)
        for (const m of list)
          if (m.expiresAt <= now) {
            usage.remove(m)
            HeldMessage.forget(m)
            byId.delete(m.id)
          }
        if (kept.length) byTopic.set(topic, kept)
        else byTopic.delete(topic)
      }
    },
    clear() {
      for (const message of byId.values()) HeldMessage.forget(message)
      usage.clear()
      byTopic.clear()
      byId.clear()
    },
  }
}

/**
 * A stored message as a local store holds it, with the client ids that acknowledged it: usually
 * one, held as that string (the connection's own, no copy), a list only for more. Kept on the
 * message, an ack is one lookup in the map of every message (hundreds of thousands of entries)
 * and no object of its own. Every message is held until its TTL and outlives many collections:
 * what it holds is copied again by each, so less per message is less collection work. The acks
 * are a private field: the message handed out reads as a plain `StoredMessage`.
 */
class HeldMessage implements StoredMessage {
  readonly id: string
  readonly topic: string
  readonly message: string
  readonly tag: number
  readonly publishedAt: number
  readonly expiresAt: number
  readonly publisher: string
  readonly seq: number
  readonly jsonSafe: boolean | undefined
  /** The index holding it; undefined once it no longer does (expired, not persisted, cleared). */
  #holder: object | undefined
  #acks: string | string[] | undefined = undefined
  constructor(added: NewMessage, seq: number, topic: string, holder: object) {
    this.#holder = holder
    this.id = added.id
    this.topic = topic
    this.message = added.message
    this.tag = added.tag
    this.publishedAt = added.publishedAt
    this.expiresAt = added.expiresAt
    this.publisher = added.publisher
    this.seq = seq
    this.jsonSafe = added.jsonSafe
  }
  /** Records the ack; the message's expiry, or undefined when not held or acknowledged already. */
  static ack(held: HeldMessage | undefined, clientId: string): number | undefined {
    if (!held) return undefined
    const clients = held.#acks
    if (clients === undefined) held.#acks = clientId
    else if (typeof clients === 'string') {
      if (clients === clientId) return undefined
      held.#acks = [clients, clientId]
    } else if (clients.includes(clientId)) return undefined
    else clients.push(clientId)
    return held.expiresAt
  }
  /** The message, if `holder` holds it now; else undefined. */
  static heldBy(message: StoredMessage | undefined, holder: object): HeldMessage | undefined {
    return message instanceof HeldMessage && message.#holder === holder ? message : undefined
  }
  static forget(held: HeldMessage | undefined) {
    if (held) held.#holder = undefined
  }
  static isAcked(held: HeldMessage | undefined, clientId: string): boolean {
    const clients = held === undefined ? undefined : held.#acks
    return typeof clients === 'string' ? clients === clientId : (clients?.includes(clientId) ?? false)
  }
}

export type LocalStoreOptions = {
  /** Storage quotas (see `StorageQuotas`); each defaults, 0 turns one off. */
  quotas?: StorageQuotas | undefined
}

/**
 * A store in process memory: fast, and gone when the relay stops. A publish past a storage quota
 * is refused (`QuotaExceededError`).
 *
 * @example
 * const relay = createRelay({ port: 5555, store: memoryStore({ quotas: { maxStoredBytes: 256 * 1024 * 1024 } }) })
 */
export function memoryStore(options: LocalStoreOptions = {}): RelayStore {
  const index = memoryIndex(options.quotas)
  // One settled promise answers every ack and add: the relay follows a promise it has seen once.
  const done = Promise.resolve()
  return {
    add: async (message) => index.add(message),
    addToBatch: (message) => ({ added: index.add(message), committed: done }),
    checkQuota: (messages) => index.checkQuota(messages),
    list: async (topic, now) => index.list(topic, now),
    ack: (clientId, messageId, _expiresAt, _now, held) => {
      index.ack(clientId, messageId, held)
      return done
    },
    isAcked: async (clientId, messageId) => index.isAcked(clientId, messageId),
    prune: async (now) => index.prune(now),
    close: async () => index.clear(),
  }
}
