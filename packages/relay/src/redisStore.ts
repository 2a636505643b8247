import { withoutCredentials } from '@latchkey/service'
import { Redis } from 'ioredis'
import { type NewMessage, type RelayStore, type StoredMessage, withSeq } from './store.js'

export type RedisStoreOptions = {
  /** Prefix of every key and of the fan-out channel; relays that share it share messages. Default `latchkey:relay:`. */
  prefix?: string | undefined
}

/**
 * Redis keeps a message this much longer than its TTL before deleting it by itself, so a clock
 * that runs behind the relay's never loses one; `prune` removes it on time.
 */
const GRACE_MS = 3_600_000

// Stores messages, each once: its record (expiring by itself), its place in the topic's list under
// the next sequence number, its expiry in the index, all or nothing; then one fan-out notice to
// every relay node, a line per stored message (`seq topic id record`). Scripts run one at a time,
// so sequence numbers, list order and notice order agree. Answers each message's sequence number,
// or 0 for one already stored. Keys are built here from the prefix, and the messages come as one
// argument, a line each (`id topic publisher keep-ms expiry body`; a record is `publisher expiry
// body`): a few large arguments cost the client far less to send than many small ones. (A Redis
// Cluster is not supported: one counter orders every topic.) ARGV: the prefix, the channel, the lines.
const ADD = `
local prefix, lines = ARGV[1], ARGV[3]
local counter, index = prefix .. 'seq', prefix .. 'expiry'
local seqs, notice, lists, stored = {}, {}, {}, {}
local i, at = 0, 1
while at <= #lines do
  local id, topic, publisher, keep, expires, body, after = string.match(lines, '^(%S+) (%S+) (%S+) (%S+) (%S+) ([^\\n]*)()', at)
  at = after + 1
  i = i + 1
  local record = publisher .. ' ' .. expires .. ' ' .. body
  if redis.call('SET', prefix .. 'm:' .. id, record, 'NX', 'PX', keep) then
    stored[#stored + 1] = { i, id, topic, tonumber(keep), expires, record }
  end
  seqs[i] = 0
end
if #stored == 0 then return seqs end
-- One increment numbers every message stored by this call, in order.
local first = redis.call('INCRBY', counter, #stored) - #stored
for k, m in ipairs(stored) do
  local seq = first + k
  local entry = seq .. ' ' .. m[2]
  local list = prefix .. 't:' .. m[3]
  redis.call('RPUSH', list, entry)
  -- A topic's list lives as long as its longest-lived message: its expiry is set once per call.
  if (lists[list] or 0) < m[4] then lists[list] = m[4] end
  redis.call('ZADD', index, m[5], m[3] .. ':' .. entry)
  seqs[m[1]] = seq
  notice[#notice + 1] = entry .. ' ' .. m[3] .. ' ' .. m[6]
end
for list, ms in pairs(lists) do
  if redis.call('PTTL', list) < ms then redis.call('PEXPIRE', list, ms) end
end
redis.call('PUBLISH', ARGV[2], table.concat(notice, '\\n'))
return seqs
`

// Records acks, each for as long as its message lives; an ack for a message that is gone is
// dropped. ARGV: the prefix, then the acks as one argument, a line each (`message-id client-id`).
const ACK = `
local prefix = ARGV[1]
for id, client in string.gmatch(ARGV[2], '(%S+) (%S+)') do
  local ttl = redis.call('PTTL', prefix .. 'm:' .. id)
  if ttl > 0 then
    local set = prefix .. 'a:' .. id
    redis.call('SADD', set, client)
    redis.call('PEXPIRE', set, ttl)
  end
end
return 1
`

// Counts requests, per client and second, over every node. KEYS: a counter per client and second;
// ARGV: how many to add to each, then how long a counter is kept (ms). Answers each total.
const COUNT = `
local totals = {}
local keep = ARGV[#ARGV]
for i = 1, #KEYS do
  local total = redis.call('INCRBY', KEYS[i], ARGV[i])
  if total == tonumber(ARGV[i]) then redis.call('PEXPIRE', KEYS[i], keep) end
  totals[i] = total
end
return totals
`

/** A request counter outlives its second by this much, so nodes whose clocks differ a little share it. */
const COUNTER_KEEP_MS = 10_000

/** Most messages or acks one script call takes. */
const MAX_BATCH = 256

type Scripts = {
  relayAdd(keyCount: number, ...args: (string | number)[]): Promise<number[]>
  relayAck(keyCount: number, ...args: string[]): Promise<number>
  relayCount(keyCount: number, ...args: (string | number)[]): Promise<number[]>
}

/**
 * Gathers the calls made within one turn of the event loop (every socket read in it) into one
 * script call: under load that is one round trip and one notice for many messages instead of one
 * each. Calls are sent in the order they were made, so stored order is call order.
 */
function batcher<item, result>(run: (items: item[]) => Promise<result[]>) {
  let pending: { item: item; resolve(value: result): void; reject(error: unknown): void }[] = []
  const flush = () => {
    const taken = pending
    pending = []
    for (let start = 0; start < taken.length; start += MAX_BATCH) {
      const part = taken.slice(start, start + MAX_BATCH)
      run(part.map((entry) => entry.item)).then(
        (results) => {
          for (const [index, entry] of part.entries()) entry.resolve(results[index]!)
        },
        (error: unknown) => {
          for (const entry of part) entry.reject(error)
        },
      )
    }
  }
  return (item: item) =>
    new Promise<result>((resolve, reject) => {
      if (!pending.length) setImmediate(flush)
      pending.push({ item, resolve, reject })
    })
}

/**
 * A message from its record, `publisher expiry tag publishedAt "message"` (or the JSON object of
 * earlier versions, which start with `{`).
 */
function readRecord(record: string, seq: number, id: string, topic: string): StoredMessage {
  if (record.charCodeAt(0) === 123) return withSeq(JSON.parse(record) as NewMessage, seq)
  const first = record.indexOf(' ')
  const second = record.indexOf(' ', first + 1)
  const third = record.indexOf(' ', second + 1)
  const fourth = record.indexOf(' ', third + 1)
  return {
    id,
    topic,
    publisher: record.slice(0, first),
    expiresAt: Number(record.slice(first + 1, second)),
    tag: Number(record.slice(second + 1, third)),
    publishedAt: Number(record.slice(third + 1, fourth)),
    message: JSON.parse(record.slice(fourth + 1)) as string,
    seq,
  }
}

/**
 * Like `batcher`, for calls that answer nothing: every call of a turn gets the same promise, which
 * settles once all of that turn's script calls have, so a caller can tell calls of one batch apart
 * from the next without a promise each.
 */
function sharedBatcher<item>(run: (items: item[]) => Promise<unknown>) {
  let pending: item[] = []
  let current: Promise<void> | undefined
  return (item: item): Promise<void> => {
    pending.push(item)
    current ??= new Promise<void>((resolve, reject) =>
      setImmediate(() => {
        const taken = pending
        pending = []
        current = undefined
        const parts: Promise<unknown>[] = []
        for (let start = 0; start < taken.length; start += MAX_BATCH) parts.push(run(taken.slice(start, start + MAX_BATCH)))
        Promise.all(parts).then(() => resolve(), reject)
      }),
    )
    return current
  }
}

/**
 * A store in Redis (`REDIS_URL`): several relay nodes pointed at one Redis share stored messages,
 * acknowledgements and live delivery, so a client on one node hears what a client on another
 * publishes. Every key expires by itself (TTL plus an hour), so Redis stays bounded even when no
 * relay prunes.
 *
 * @example
 * const relay = createRelay({ port: 5555, store: await redisStore('redis://127.0.0.1:6379') })
 */
export async function redisStore(url: string, options: RedisStoreOptions = {}): Promise<RelayStore> {
  const prefix = options.prefix ?? 'latchkey:relay:'
  const channel = `${prefix}published`
  const connect = async (purpose: string) => {
    // Commands issued in one turn (the isAcked checks of a backlog) leave in one write.
    const redis = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 2, enableOfflineQueue: true, enableAutoPipelining: true })
    // Later failures surface through the commands that fail; an unhandled 'error' event would end
    // the process. The last one explains a failed connect better than "Connection is closed".
    let lastError: Error | undefined
    redis.on('error', (error: Error) => (lastError = error))
    try {
      await redis.connect()
    } catch (cause) {
      redis.disconnect()
      const reason = lastError ?? (cause as Error)
      throw new Error(`Could not connect to Redis at ${withoutCredentials(url)} (${purpose}): ${reason.message}`, { cause: reason })
    }
    return redis
  }
  const redis = await connect('store')
  redis.defineCommand('relayAdd', { lua: ADD })
  redis.defineCommand('relayAck', { lua: ACK })
  redis.defineCommand('relayCount', { lua: COUNT })
  const scripts = redis as unknown as Scripts
  let subscriber: Redis | undefined

  const messageKey = (id: string) => `${prefix}m:${id}`
  const topicKey = (topic: string) => `${prefix}t:${topic}`
  const ackKey = (id: string) => `${prefix}a:${id}`
  const indexKey = `${prefix}expiry`
  // The scripts build the same names (m:, t:, a:, expiry) and the counter's, `seq`.
  /** A topic list entry is `seq id`. */
  const parseEntry = (entry: string): [seq: number, id: string] => {
    const space = entry.indexOf(' ')
    return [Number(entry.slice(0, space)), entry.slice(space + 1)]
  }

  const storeBatch = batcher<NewMessage, StoredMessage | undefined>(async (messages) => {
    // A message is a JSON string: it never holds a raw newline. Ids, topics and client ids hold no space.
    const lines = messages.map(
      (m) =>
        `${m.id} ${m.topic} ${m.publisher} ${Math.max(m.expiresAt - m.publishedAt, 0) + GRACE_MS} ${m.expiresAt} ${m.tag} ${m.publishedAt} ${JSON.stringify(m.message)}`,
    )
    const seqs = await scripts.relayAdd(0, prefix, channel, lines.join('\n'))
    return messages.map((message, index) => (seqs[index] ? withSeq(message, seqs[index]) : undefined))
  })
  const ackBatch = sharedBatcher<[clientId: string, messageId: string]>((acks) => {
    const lines = acks.map(([clientId, messageId]) => `${messageId} ${clientId}`)
    return scripts.relayAck(0, prefix, lines.join('\n'))
  })
  // A counter per client and second; each call is answered with the count up to and including it.
  const countBatch = batcher<[key: string, count: number], number>(async (calls) => {
    const counts = new Map<string, number>()
    for (const [key, count] of calls) counts.set(key, (counts.get(key) ?? 0) + count)
    const keys = [...counts.keys()]
    const totals = await scripts.relayCount(keys.length, ...keys, ...counts.values(), COUNTER_KEEP_MS)
    const before = new Map(keys.map((key, index) => [key, totals[index]! - counts.get(key)!]))
    return calls.map(([key, count]) => {
      const total = before.get(key)! + count
      before.set(key, total)
      return total
    })
  })

  return {
    add: storeBatch,
    async list(topic, now) {
      const entries = await redis.lrange(topicKey(topic), 0, -1)
      if (!entries.length) return []
      const parsed = entries.map(parseEntry)
      const records = await redis.mget(parsed.map(([, id]) => messageKey(id)))
      const gone = entries.filter((_, index) => records[index] === null)
      // Records Redis expired by itself leave their entries behind; drop those.
      if (gone.length) await Promise.all(gone.map((entry) => redis.lrem(topicKey(topic), 0, entry)))
      const messages: StoredMessage[] = []
      for (const [index, record] of records.entries()) {
        if (record === null) continue
        const [seq, id] = parsed[index]!
        const message = readRecord(record, seq, id, topic)
        if (message.expiresAt > now) messages.push(message)
      }
      return messages
    },
    ack: (clientId, messageId) => ackBatch([clientId, messageId]),
    countRequests: (clientId, now, count) => countBatch([`${prefix}r:${Math.floor(now / 1000)}:${clientId}`, count]),
    async isAcked(clientId, messageId) {
      return (await redis.sismember(ackKey(messageId), clientId)) === 1
    },
    async prune(now) {
      const expired = await redis.zrangebyscore(indexKey, '-inf', now)
      if (!expired.length) return
      const batch = redis.multi()
      for (const member of expired) {
        const split = member.indexOf(':')
        const [topic, entry] = [member.slice(0, split), member.slice(split + 1)]
        const [, id] = parseEntry(entry)
        batch.lrem(topicKey(topic), 0, entry).del(messageKey(id), ackKey(id)).zrem(indexKey, member)
      }
      await batch.exec()
    },
    async watch(listener, watchOptions) {
      subscriber ??= await connect('fan-out')
      const own = subscriber
      const wants = watchOptions?.wants
      own.on('message', (from: string, text: string) => {
        if (from !== channel) return
        // A line per message, `seq id topic publisher expiry tag publishedAt "message"`: the
        // message is a JSON string, which never holds a raw newline.
        for (let start = 0; start < text.length; ) {
          const newline = text.indexOf('\n', start)
          const end = newline === -1 ? text.length : newline
          const first = text.indexOf(' ', start)
          const second = text.indexOf(' ', first + 1)
          const third = text.indexOf(' ', second + 1)
          const fourth = text.indexOf(' ', third + 1)
          const topic = text.slice(second + 1, third)
          // Only messages some connection here would be sent are read further.
          if (!wants || wants(topic, text.slice(third + 1, fourth)))
            listener(readRecord(text.slice(third + 1, end), Number(text.slice(start, first)), text.slice(first + 1, second), topic))
          start = end + 1
        }
      })
      await own.subscribe(channel)
      return async () => {
        await own.unsubscribe(channel)
        own.removeAllListeners('message')
      }
    },
    async ping() {
      const answer = await redis.ping()
      if (answer !== 'PONG') throw new Error(`Redis answered PING with ${answer}`)
    },
    async close() {
      subscriber?.disconnect()
      await redis.quit().catch(() => redis.disconnect())
    },
  }
}
