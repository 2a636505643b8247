import { withoutCredentials } from '@latchkey/service'
import { Redis } from 'ioredis'
import type { NewMessage, RelayStore, StoredMessage } from './store.js'

export type RedisStoreOptions = {
  /** Prefix of every key and of the fan-out channel; relays that share it share messages. Default `latchkey:relay:`. */
  prefix?: string | undefined
}

/**
 * Redis keeps a message this much longer than its TTL before deleting it by itself, so a clock
 * that runs behind the relay's never loses one; `prune` removes it on time.
 */
const GRACE_MS = 3_600_000

// Stores a message once: its record (expiring by itself), its place in the topic's list under the
// next sequence number, its expiry in the index, and a fan-out notice to every relay node, all or
// nothing. Scripts run one at a time, so sequence numbers, list order and notice order agree.
// Answers the sequence number, or 0 for a message already stored.
const ADD = `
if not redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then return 0 end
local seq = redis.call('INCR', KEYS[4])
local entry = seq .. ' ' .. ARGV[3]
redis.call('RPUSH', KEYS[2], entry)
if redis.call('PTTL', KEYS[2]) < tonumber(ARGV[2]) then redis.call('PEXPIRE', KEYS[2], ARGV[2]) end
redis.call('ZADD', KEYS[3], ARGV[4], ARGV[5] .. ':' .. entry)
redis.call('PUBLISH', ARGV[6], seq .. ' ' .. ARGV[1])
return seq
`

// Records an ack for as long as its message lives; an ack for a message that is gone is dropped.
const ACK = `
local ttl = redis.call('PTTL', KEYS[1])
if ttl <= 0 then return 0 end
redis.call('SADD', KEYS[2], ARGV[1])
redis.call('PEXPIRE', KEYS[2], ttl)
return 1
`

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
    const redis = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 2, enableOfflineQueue: true })
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
  let subscriber: Redis | undefined

  const messageKey = (id: string) => `${prefix}m:${id}`
  const topicKey = (topic: string) => `${prefix}t:${topic}`
  const ackKey = (id: string) => `${prefix}a:${id}`
  const indexKey = `${prefix}expiry`
  const seqKey = `${prefix}seq`
  /** A topic list entry is `seq id`. */
  const parseEntry = (entry: string): [seq: number, id: string] => {
    const space = entry.indexOf(' ')
    return [Number(entry.slice(0, space)), entry.slice(space + 1)]
  }

  return {
    async add(message) {
      const keepMs = Math.max(message.expiresAt - message.publishedAt, 0) + GRACE_MS
      const seq = (await redis.eval(
        ADD,
        4,
        messageKey(message.id),
        topicKey(message.topic),
        indexKey,
        seqKey,
        JSON.stringify(message),
        keepMs,
        message.id,
        message.expiresAt,
        message.topic,
        channel,
      )) as number
      return seq === 0 ? undefined : { ...message, seq }
    },
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
        const message = JSON.parse(record) as NewMessage
        if (message.expiresAt > now) messages.push({ ...message, seq: parsed[index]![0] })
      }
      return messages
    },
    async ack(clientId, messageId) {
      await redis.eval(ACK, 2, messageKey(messageId), ackKey(messageId), clientId)
    },
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
    async watch(listener) {
      subscriber ??= await connect('fan-out')
      const own = subscriber
      own.on('message', (from: string, text: string) => {
        if (from !== channel) return
        const space = text.indexOf(' ')
        listener({ ...(JSON.parse(text.slice(space + 1)) as NewMessage), seq: Number(text.slice(0, space)) })
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
