import { type Metrics, withoutCredentials } from '@latchkey/service'
import { Redis } from 'ioredis'
import { fieldsBytes, messageJsonBytes, writeFields, writeMessageJson } from './bytes.js'
import { timeRedis } from './metrics.js'
import { MESSAGE_OVERHEAD_BYTES, QuotaExceededError, type QuotaScope, quotaLimits, type StorageQuotas } from './quota.js'
import { type NewMessage, type RelayStore, type StoredMessage, withSeq } from './store.js'

const NEWLINE = 0x0a

export type RedisStoreOptions = {
  /** Prefix of every key and of the fan-out channel; relays that share it share messages. Default `latchkey:relay:`. */
  prefix?: string | undefined
  /**
   * Storage quotas (see `StorageQuotas`), counted in Redis over every node: give every node the
   * same. Each defaults; 0 turns one off.
   */
  quotas?: StorageQuotas | undefined
  /** Times every command's round trip (`latchkey_relay_redis_round_trip_seconds`). Default: nothing timed. */
  metrics?: Metrics | undefined
}

/**
 * Redis keeps a message this much longer than its TTL before deleting it by itself, so a clock
 * that runs behind the relay's never loses one; `prune` removes it on time.
 */
const GRACE_MS = 3_600_000

/**
 * The fan-out notices, versioned by channel: a node listens on its own version's channel and on
 * the one before, and while nodes of the version before listen (a rolling upgrade), its script
 * also publishes that version's notice for them. Version 1, `published`: a line per stored message,
 * `seq id topic record`. Version 2, `published:2`: the seqs the call gave its lines (0 for a line
 * already stored), space-separated on the first line, then the lines as the node sent them, so the
 * script copies no message to build it.
 */
/**
 * A topic's list is kept this much longer than the message that last extended it needs, so the
 * messages that follow within that time need no PEXPIRE of their own.
 */
const LIST_SLACK_MS = 600_000
/**
 * How long before a message's expiry a node stops counting on its list entry to keep the list
 * alive: another node's clock may run this far ahead when it prunes.
 */
const CLOCK_SKEW_MS = 60_000

const NOTICE_V1 = 'published'
const NOTICE_V2 = 'published:2'

// Stores messages, each once: its record (expiring by itself), its place in the topic's list under
// the next sequence number, its expiry in the index, all or nothing; then one fan-out notice to
// every relay node. Scripts run one at a time, so sequence numbers, list order and notice order
// agree: the counter is read once and written once per call, as good as an INCRBY here. Answers
// each line's sequence number, or 0 for a message already stored. Keys are built here from the
// prefix, and the messages come as one argument, a line each (`id topic keep-ms expiry record`; a
// record is `publisher expiry tag publishedAt "message"`): a few large arguments cost the client far
// less to send than many small ones. Lines are cut with plain string.find, not patterns: Lua
// matches a pattern a character at a time, which cost Redis more than the commands. A topic's list
// outlives its longest-lived message by LIST_SLACK_MS (PEXPIRE GT, Redis 7); a negative keep-ms
// says the node knows the list already does (see `listCovers`), which spares a PEXPIRE per message.
// The expiry index holds a member per call and second of expiry (its messages' `topic:seq id`
// entries, a line each), scored by the latest of them, not a member per message. (A Redis Cluster
// is not supported: one counter orders every topic.) ARGV: the prefix, the lines, the relay's,
// a topic's and a client's byte quota, a topic's message quota, and 1 when the lines are one
// publish, stored whole or not at all.
const ADD = `
local prefix, lines = ARGV[1], ARGV[2]
-- Storage quotas in bytes (0: none), counted in one hash over every node: the relay's (g), each
-- topic's (t:), each publisher's (c:). A message counts its record and MESSAGE_OVERHEAD_BYTES.
-- A topic's messages (maxN, 0: none) are its list's length, which every prune keeps.
local maxG, maxT, maxC, maxN = tonumber(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[5]), tonumber(ARGV[6])
local quotas = maxG + maxT + maxC > 0
local overhead = ${MESSAGE_OVERHEAD_BYTES}
local usage = prefix .. 'usage'
local function count(field, by)
  local total = redis.call('HINCRBY', usage, field, by)
  if total <= 0 then redis.call('HDEL', usage, field) end
  return total
end
local v1, v2 = prefix .. '${NOTICE_V1}', prefix .. '${NOTICE_V2}'
local find, sub = string.find, string.sub
-- One publish of several messages (ARGV[7] is 1: an irn_batchPublish, a wc_approveSession) is
-- stored whole or not at all. Before anything is written, its messages not stored yet are counted
-- together, in order, against what is used: the first that would pass a quota refuses them all
-- (answered {-1}, {-2}, {-3} or {-4}), and nothing is written, counts included. Only reads: then
-- every message passes the check below, where it is counted. Single publishes never come here.
if (quotas or maxN > 0) and ARGV[7] == '1' then
  local adding, seen = {}, {}
  local function over(field, by, max)
    if max == 0 then return false end
    local total = (adding[field] or tonumber(redis.call('HGET', usage, field) or '0')) + by
    adding[field] = total
    return total > max
  end
  local function full(topic)
    if maxN == 0 then return false end
    local total = (adding['n:' .. topic] or redis.call('LLEN', prefix .. 't:' .. topic)) + 1
    adding['n:' .. topic] = total
    return total > maxN
  end
  local at, size = 1, #lines
  while at <= size do
    local a = find(lines, ' ', at, true)
    local b = find(lines, ' ', a + 1, true)
    local c = find(lines, ' ', b + 1, true)
    local d = find(lines, ' ', c + 1, true)
    local e = find(lines, '\\n', d + 1, true) or size + 1
    local id = sub(lines, at, a - 1)
    -- A message already stored (or twice in the batch) is stored once and counts once.
    if not seen[id] and redis.call('EXISTS', prefix .. 'm:' .. id) == 0 then
      seen[id] = true
      local bytes = e - d - 1 + overhead
      if over('g', bytes, maxG) then return { -1 } end
      if over('t:' .. sub(lines, a + 1, b - 1), bytes, maxT) then return { -2 } end
      if over('c:' .. sub(lines, d + 1, find(lines, ' ', d + 1, true) - 1), bytes, maxC) then return { -3 } end
      if full(sub(lines, a + 1, b - 1)) then return { -4 } end
    end
    at = e + 1
  end
end
-- Nodes of version 1 listen on its channel alone; version 2 nodes listen on both.
local listening = redis.call('PUBSUB', 'NUMSUB', v1, v2)
local old = listening[2] > listening[4]
local counter = prefix .. 'seq'
local first = tonumber(redis.call('GET', counter) or '0')
local seq = first
local seqs, answers, lists, groups, used, notice = {}, {}, {}, {}, {}, {}
local i, at, size = 0, 1, #lines
while at <= size do
  local a = find(lines, ' ', at, true)
  local b = find(lines, ' ', a + 1, true)
  local c = find(lines, ' ', b + 1, true)
  local d = find(lines, ' ', c + 1, true)
  local e = find(lines, '\\n', d + 1, true) or size + 1
  local id, keep = sub(lines, at, a - 1), tonumber(sub(lines, b + 1, c - 1))
  at = e + 1
  i = i + 1
  seqs[i] = 0
  answers[i] = 0
  -- A negative keep: the node knows the topic's list already lives long enough.
  local extend = keep > 0
  if not extend then keep = -keep end
  local record = sub(lines, d + 1, e - 1)
  local topic = sub(lines, a + 1, b - 1)
  -- Counted first, taken back when over a quota or already stored: -1, -2, -3, -4 answer which
  -- quota (the relay's, the topic's, the publisher's bytes, the topic's messages) refused a
  -- message not stored before.
  local refused, size, publisher = 0, e - d - 1 + overhead, nil
  if quotas then
    publisher = sub(lines, d + 1, find(lines, ' ', d + 1, true) - 1)
    local g, t, c = count('g', size), count('t:' .. topic, size), count('c:' .. publisher, size)
    if maxG > 0 and g > maxG then refused = 1 elseif maxT > 0 and t > maxT then refused = 2 elseif maxC > 0 and c > maxC then refused = 3 end
  end
  if refused == 0 and maxN > 0 and redis.call('LLEN', prefix .. 't:' .. topic) >= maxN then refused = 4 end
  if refused == 0 and redis.call('SET', prefix .. 'm:' .. id, record, 'NX', 'PX', keep) then
    seq = seq + 1
    seqs[i] = seq
    answers[i] = seq
    local entry = seq .. ' ' .. id
    local list = prefix .. 't:' .. topic
    local fresh = redis.call('RPUSH', list, entry) == 1
    if fresh or extend then
      local known = lists[list]
      keep = keep + ${LIST_SLACK_MS}
      if not known then lists[list] = { keep, fresh } else
        if known[1] < keep then known[1] = keep end
        if fresh then known[2] = true end
      end
    end
    local expires = tonumber(sub(lines, c + 1, d - 1))
    local second = math.floor(expires / 1000)
    local group = groups[second]
    if not group then group = { expires }; groups[second] = group elseif group[1] < expires then group[1] = expires end
    group[#group + 1] = topic .. ':' .. entry
    if quotas then
      local counted = used[second]
      if not counted then counted = { expires }; used[second] = counted elseif counted[1] < expires then counted[1] = expires end
      counted[#counted + 1] = seq .. ' ' .. size .. ' ' .. topic .. ' ' .. publisher
    end
    if old then notice[#notice + 1] = entry .. ' ' .. topic .. ' ' .. record end
  else
    if quotas then
      count('g', -size)
      count('t:' .. topic, -size)
      count('c:' .. publisher, -size)
    end
    if refused > 0 and redis.call('EXISTS', prefix .. 'm:' .. id) == 0 then answers[i] = -refused end
  end
end
if seq == first then return answers end
redis.call('SET', counter, seq)
for list, known in pairs(lists) do
  if known[2] then redis.call('PEXPIRE', list, known[1]) else redis.call('PEXPIRE', list, known[1], 'GT') end
end
for _, group in pairs(groups) do
  redis.call('ZADD', prefix .. 'expiry:2', group[1], table.concat(group, '\\n', 2))
end
-- What each call and second of expiry counted, released by a prune (see RELEASE).
for _, counted in pairs(used) do
  redis.call('ZADD', prefix .. 'usage:expiry', counted[1], table.concat(counted, '\\n', 2))
end
redis.call('PUBLISH', v2, table.concat(seqs, ' ') .. '\\n' .. lines)
if old then redis.call('PUBLISH', v1, table.concat(notice, '\\n')) end
return answers
`

// Releases the storage counted for expired messages, all nodes' at once: an entry is taken from
// the index and subtracted in one script, so two nodes pruning at once never release it twice.
// Until some node prunes, expired messages still count (refusing more, never less). ARGV: the
// prefix, now (ms).
const RELEASE = `
local prefix, now = ARGV[1], ARGV[2]
local index, usage = prefix .. 'usage:expiry', prefix .. 'usage'
local function count(field, by)
  if redis.call('HINCRBY', usage, field, by) <= 0 then redis.call('HDEL', usage, field) end
end
local expired = redis.call('ZRANGEBYSCORE', index, '-inf', now)
for _, member in ipairs(expired) do
  for size, topic, publisher in string.gmatch(member, '%d+ (%d+) (%S+) (%S+)') do
    count('g', -size)
    count('t:' .. topic, -size)
    count('c:' .. publisher, -size)
  end
  redis.call('ZREM', index, member)
end
return #expired
`

// Records acks, each for as long as its message lives; an ack for a message that is gone is
// dropped. ARGV: the prefix, then the acks as one argument, a line each: `message-id client-id`,
// or `message-id client-id keep-ms` when the node knows the message has that long left and cannot
// have been pruned meanwhile (it expires well after now, by more than clocks differ): then no
// PTTL of its record is needed.
const ACK = `
local prefix, acks = ARGV[1], ARGV[2]
local find, sub = string.find, string.sub
local at, size = 1, #acks
while at <= size do
  local a = find(acks, ' ', at, true)
  local e = find(acks, '\\n', a + 1, true) or size + 1
  local b = find(acks, ' ', a + 1, true)
  local id, client, ttl = sub(acks, at, a - 1), nil, nil
  if b and b < e then
    client, ttl = sub(acks, a + 1, b - 1), tonumber(sub(acks, b + 1, e - 1))
  else
    client, ttl = sub(acks, a + 1, e - 1), redis.call('PTTL', prefix .. 'm:' .. id)
  end
  at = e + 1
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
const MAX_BATCH = 512
/**
 * How long a message or ack waits for others to share its script call: one call per turn of the
 * event loop gathers what one socket read brought; waiting a millisecond gathers several turns'
 * into one round trip, one notice and fewer, fuller socket writes on every node.
 */
const WINDOW_MS = 1
const inWindow = (flush: () => void) => void setTimeout(flush, WINDOW_MS)

type Scripts = {
  relayAdd(keyCount: number, ...args: (string | number | Buffer)[]): Promise<number[]>
  relayAck(keyCount: number, ...args: string[]): Promise<number>
  relayCount(keyCount: number, ...args: (string | number)[]): Promise<number[]>
  relayRelease(keyCount: number, prefix: string, now: number): Promise<number>
}

/**
 * Gathers the calls made within one turn of the event loop (every socket read in it) into one
 * script call: under load that is one round trip and one notice for many messages instead of one
 * each. Calls are sent in the order they were made, so stored order is call order.
 */
function batcher<item, result>(run: (items: item[]) => Promise<(result | Error)[]>, schedule: (flush: () => void) => void = setImmediate) {
  let pending: { item: item; resolve(value: result): void; reject(error: unknown): void }[] = []
  // One flush is scheduled at a time, also after `send` took what it would have.
  let scheduled = false
  const send = () => {
    const taken = pending
    pending = []
    for (let start = 0; start < taken.length; start += MAX_BATCH) {
      const part = taken.slice(start, start + MAX_BATCH)
      run(part.map((entry) => entry.item)).then(
        (results) => {
          for (const [index, entry] of part.entries()) {
            const result = results[index]!
            // A call refused on its own (a message past a quota) while the rest of its batch went through.
            if (result instanceof Error) entry.reject(result)
            else entry.resolve(result)
          }
        },
        (error: unknown) => {
          for (const entry of part) entry.reject(error)
        },
      )
    }
  }
  const flush = () => {
    scheduled = false
    send()
  }
  const call = (item: item) =>
    new Promise<result>((resolve, reject) => {
      if (!scheduled) {
        scheduled = true
        schedule(flush)
      }
      pending.push({ item, resolve, reject })
    })
  /** Sends the calls waiting now, so that a script call made next follows them. */
  return Object.assign(call, { send })
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
 * A message read from a notice: its text stays the JSON string literal it was stored as, pushed
 * as is (`json`), and is parsed only if something reads `message`.
 */
class NoticedMessage implements StoredMessage {
  constructor(
    readonly id: string,
    readonly topic: string,
    readonly publisher: string,
    readonly expiresAt: number,
    readonly tag: number,
    readonly publishedAt: number,
    readonly json: string,
    readonly seq: number,
  ) {}
  get message(): string {
    return JSON.parse(this.json) as string
  }
}

/** Whether this node would send a message of `topic` from `publisher` to anyone. */
type Wants = ((topic: string, publisher: string) => boolean) | undefined
type Listener = (message: StoredMessage) => void

/**
 * A message from a notice line's record, `publisher expiry tag publishedAt "message"` starting at
 * `at` (`publisherEnd` the space after the publisher), or the JSON object of earlier versions.
 */
function noticed(text: string, at: number, publisherEnd: number, end: number, seq: number, id: string, topic: string, publisher: string): StoredMessage {
  if (text.charCodeAt(at) === 123) return readRecord(text.slice(at, end), seq, id, topic)
  const second = text.indexOf(' ', publisherEnd + 1)
  const third = text.indexOf(' ', second + 1)
  const fourth = text.indexOf(' ', third + 1)
  return new NoticedMessage(
    id,
    topic,
    publisher,
    Number(text.slice(publisherEnd + 1, second)),
    Number(text.slice(second + 1, third)),
    Number(text.slice(third + 1, fourth)),
    text.slice(fourth + 1, end),
    seq,
  )
}

/**
 * A version 1 notice: a line per message, `seq id topic record`; a JSON message never holds a raw
 * newline. Only messages this node wants are read past their topic and publisher.
 */
function readNoticeV1(text: string, wants: Wants, listener: Listener) {
  for (let start = 0; start < text.length; ) {
    const newline = text.indexOf('\n', start)
    const end = newline === -1 ? text.length : newline
    const first = text.indexOf(' ', start)
    const second = text.indexOf(' ', first + 1)
    const third = text.indexOf(' ', second + 1)
    const fourth = text.indexOf(' ', third + 1)
    const topic = text.slice(second + 1, third)
    // An earlier version's JSON record has no publisher up front: read whole, then asked.
    if (text.charCodeAt(third + 1) === 123) {
      const message = readRecord(text.slice(third + 1, end), Number(text.slice(start, first)), text.slice(first + 1, second), topic)
      if (!wants || wants(topic, message.publisher)) listener(message)
    } else {
      const publisher = text.slice(third + 1, fourth)
      if (!wants || wants(topic, publisher))
        listener(noticed(text, third + 1, fourth, end, Number(text.slice(start, first)), text.slice(first + 1, second), topic, publisher))
    }
    start = end + 1
  }
}

/**
 * A version 2 notice: the seqs, space-separated, on the first line, then a line per message as
 * the node sent it, `id topic keep-ms expiry record`; a seq of 0 marks a message already stored.
 * Only messages this node wants are read past their topic and publisher.
 */
function readNoticeV2(text: string, wants: Wants, listener: Listener) {
  const header = text.indexOf('\n')
  let seqAt = 0
  for (let start = header + 1; start < text.length; ) {
    const seqEnd = text.indexOf(' ', seqAt)
    const seqText = text.slice(seqAt, seqEnd === -1 || seqEnd > header ? header : seqEnd)
    seqAt = seqEnd + 1
    const newline = text.indexOf('\n', start)
    const end = newline === -1 ? text.length : newline
    if (seqText !== '0') {
      const first = text.indexOf(' ', start)
      const second = text.indexOf(' ', first + 1)
      const third = text.indexOf(' ', second + 1)
      const fourth = text.indexOf(' ', third + 1)
      const fifth = text.indexOf(' ', fourth + 1)
      const topic = text.slice(first + 1, second)
      const publisher = text.slice(fourth + 1, fifth)
      if (!wants || wants(topic, publisher)) listener(noticed(text, fourth + 1, fifth, end, Number(seqText), text.slice(start, first), topic, publisher))
    }
    start = end + 1
  }
}

/**
 * Like `batcher`, for calls that answer nothing and are sent as a line each: the lines are joined
 * as they come (no array or tuple per call), and every call of a turn gets the same promise, which
 * settles once all of that turn's script calls have, so a caller can tell calls of one batch apart
 * from the next without a promise each.
 */
function lineBatcher(run: (lines: string) => Promise<unknown>, schedule: (flush: () => void) => void) {
  let full: string[] = []
  let lines = ''
  let count = 0
  let current: Promise<void> | undefined
  return (line: string): Promise<void> => {
    if (count === MAX_BATCH) {
      full.push(lines)
      lines = ''
      count = 0
    }
    lines = count++ ? `${lines}\n${line}` : line
    current ??= new Promise<void>((resolve, reject) =>
      schedule(() => {
        const parts = full
        parts.push(lines)
        full = []
        lines = ''
        count = 0
        current = undefined
        Promise.all(parts.map(run)).then(() => resolve(), reject)
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
  const [v1, v2] = [prefix + NOTICE_V1, prefix + NOTICE_V2]
  const connect = async (purpose: string) => {
    // Commands issued in one turn (the isAcked checks of a backlog) leave in one write.
    const redis = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 2, enableOfflineQueue: true, enableAutoPipelining: true })
    // Later failures surface through the commands that fail; an unhandled 'error' event would end
    // the process. The last one explains a failed connect better than "Connection is closed".
    let lastError: Error | undefined
    redis.on('error', (error: Error) => (lastError = error))
    if (options.metrics) timeRedis(redis as unknown as Parameters<typeof timeRedis>[0], options.metrics)
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
  // The scripts use PEXPIRE … GT, new in Redis 7.0: an older server is refused here rather than
  // failing every publish.
  const version = /redis_version:(\d+)/.exec(await redis.info('server'))?.[1]
  if (version !== undefined && Number(version) < 7) {
    redis.disconnect()
    throw new Error(`Redis at ${withoutCredentials(url)} is version ${version}; the relay needs Redis 7.0 or newer`)
  }
  redis.defineCommand('relayAdd', { lua: ADD })
  redis.defineCommand('relayAck', { lua: ACK })
  redis.defineCommand('relayCount', { lua: COUNT })
  redis.defineCommand('relayRelease', { lua: RELEASE })
  const limits = quotaLimits(options.quotas)
  const scopes: readonly QuotaScope[] = ['relay', 'topic', 'client', 'topicMessages']
  const scripts = redis as unknown as Scripts
  let subscriber: Redis | undefined

  const messageKey = (id: string) => `${prefix}m:${id}`
  const topicKey = (topic: string) => `${prefix}t:${topic}`
  const ackKey = (id: string) => `${prefix}a:${id}`
  const indexKeys = [`${prefix}expiry:2`, `${prefix}expiry`]
  // The scripts build the same names (m:, t:, a:, expiry) and the counter's, `seq`.
  /** A topic list entry is `seq id`. */
  const parseEntry = (entry: string): [seq: number, id: string] => {
    const space = entry.indexOf(' ')
    return [Number(entry.slice(0, space)), entry.slice(space + 1)]
  }

  /**
   * By topic, the expiry of a message this node stored whose script also extended the topic's list
   * to outlive it by LIST_SLACK_MS. Until shortly before that expiry its entry keeps the list in
   * Redis (only a prune of it, or its record's end an hour later, removes it), and a list's expiry
   * only grows (PEXPIRE GT) while it exists: a message expiring within the slack after it needs no
   * PEXPIRE of its own. Noted only once the script answered; forgotten by `prune`.
   */
  const listCovers = new Map<string, number>()
  /**
   * Stores messages in one script call, answering each (`add`'s answer, or its quota refusal);
   * `whole`: they are one publish, and a refusal refuses them all, storing none.
   */
  const storeMessages = async (messages: readonly NewMessage[], whole: boolean): Promise<(StoredMessage | undefined | Error)[]> => {
    // A line a message, `id topic ±keep expiry publisher expiry tag published-at "message"`, written
    // as bytes field by field (bytes.ts). A message is a JSON string: it never holds a raw newline.
    // Ids, topics and client ids are ASCII and hold no space.
    const extending: boolean[] = []
    const fields = messages.map((m) => {
      const keep = Math.max(m.expiresAt - m.publishedAt, 0) + GRACE_MS
      const covered = listCovers.get(m.topic)
      const extend = covered === undefined || m.publishedAt >= covered - CLOCK_SKEW_MS || m.expiresAt > covered + LIST_SLACK_MS
      extending.push(extend)
      return [m.id, m.topic, extend ? keep : -keep, m.expiresAt, m.publisher, m.expiresAt, m.tag, m.publishedAt]
    })
    let most = 0
    for (const [index, m] of messages.entries()) most += fieldsBytes(fields[index]!) + messageJsonBytes(m.message, m.jsonSafe) + 1
    const lines = Buffer.allocUnsafe(most)
    let at = 0
    for (const [index, m] of messages.entries()) {
      if (at) lines[at++] = NEWLINE
      at = writeMessageJson(lines, writeFields(lines, at, fields[index]!), m.message, m.jsonSafe)
    }
    const quotas = [limits.relay, limits.topic, limits.client, limits.topicMessages]
    const seqs = await (whole
      ? scripts.relayAdd(0, prefix, lines.subarray(0, at), ...quotas, 1)
      : scripts.relayAdd(0, prefix, lines.subarray(0, at), ...quotas))
    return messages.map((message, index) => {
      // A publish refused whole is answered with its refusal alone.
      const seq = whole && seqs[0]! < 0 ? seqs[0]! : seqs[index]!
      if (seq < 0) {
        const scope = scopes[-seq - 1]!
        return new QuotaExceededError(scope, limits[scope])
      }
      if (!seq) return undefined
      // Stored by this call and its list extended for it: its entry now holds a list that outlives it by the slack.
      if (extending[index]) {
        const covered = listCovers.get(message.topic)
        if (covered === undefined || covered < message.expiresAt) listCovers.set(message.topic, message.expiresAt)
      }
      return withSeq(message, seq)
    })
  }
  const storeBatch = batcher<NewMessage, StoredMessage | undefined>((messages) => storeMessages(messages, false), inWindow)
  const ackBatch = lineBatcher((lines) => scripts.relayAck(0, prefix, lines), inWindow)
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
    // Its own script call, sent after the single publishes waiting for theirs (one connection to
    // Redis keeps them in order), so the batch is checked against the quotas and stored in one step.
    async addAll(messages) {
      storeBatch.send()
      const answers = await storeMessages(messages, true)
      for (const answer of answers) if (answer instanceof Error) throw answer
      return answers as (StoredMessage | undefined)[]
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
        const [seq, id] = parsed[index]!
        const message = readRecord(record, seq, id, topic)
        if (message.expiresAt > now) messages.push(message)
      }
      return messages
    },
    // Where the relay says when the message expires and it expires well after now, its ack needs no
    // look-up of the record: no prune can have dropped it, and the ack lives as long as it.
    ack: (clientId, messageId, expiresAt, now) =>
      ackBatch(
        expiresAt !== undefined && now !== undefined && expiresAt - now > CLOCK_SKEW_MS
          ? `${messageId} ${clientId} ${expiresAt - now + GRACE_MS}`
          : `${messageId} ${clientId}`,
      ),
    countRequests: (clientId, now, count) => countBatch([`${prefix}r:${Math.floor(now / 1000)}:${clientId}`, count]),
    async isAcked(clientId, messageId) {
      return (await redis.sismember(ackKey(messageId), clientId)) === 1
    },
    async prune(now) {
      await scripts.relayRelease(0, prefix, now)
      for (const [topic, covered] of listCovers) if (covered - CLOCK_SKEW_MS <= now) listCovers.delete(topic)
      // This version's index, and version 1's (a member per message) that older nodes filled.
      for (const index of indexKeys) {
        const expired = await redis.zrangebyscore(index, '-inf', now)
        if (!expired.length) continue
        const batch = redis.multi()
        for (const member of expired) {
          for (const item of member.split('\n')) {
            const split = item.indexOf(':')
            const [topic, entry] = [item.slice(0, split), item.slice(split + 1)]
            const [, id] = parseEntry(entry)
            batch.lrem(topicKey(topic), 0, entry).del(messageKey(id), ackKey(id))
          }
          batch.zrem(index, member)
        }
        await batch.exec()
      }
    },
    async watch(listener, watchOptions) {
      subscriber ??= await connect('fan-out')
      const own = subscriber
      const wants = watchOptions?.wants
      own.on('message', (from: string, text: string) => {
        // Only messages some connection here would be sent are read past their topic and publisher.
        if (from === v2) readNoticeV2(text, wants, listener)
        // While version 1 nodes share the store: their messages, and copies of this version's for
        // them (dropped as already sent: the relay sends a topic's messages once, in seq order).
        else if (from === v1) readNoticeV1(text, wants, listener)
      })
      // One command, so Redis counts this node on both channels or on neither: a node of this
      // version's script tells version 1 listeners from version 2 ones by the difference.
      await own.subscribe(v2, v1)
      return async () => {
        await own.unsubscribe(v2, v1)
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
