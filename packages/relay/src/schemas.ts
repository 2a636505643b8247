/**
 * Every frame a client sends the relay, checked against a schema before anything reads it: a
 * request's params, an answer to one of our pushes. Messages a check refuses are answered with
 * the relay's JSON-RPC errors (`RelayErrorCode`) and change nothing.
 */
import { z } from 'zod'

/** Limits the schemas hold every request to. */
export const MIN_TTL_S = 10
export const MAX_TTL_S = 30 * 86_400
export const MAX_BATCH = 500

const topic = z.string({ error: 'Invalid params: topic must be 32 bytes of lowercase hex' }).regex(/^[0-9a-f]{64}$/, {
  error: 'Invalid params: topic must be 32 bytes of lowercase hex',
})
const message = z
  .string({ error: 'Invalid params: message must be a non-empty string' })
  .min(1, { error: 'Invalid params: message must be a non-empty string' })
const ttlError = `Invalid params: ttl must be whole seconds from ${MIN_TTL_S} to ${MAX_TTL_S}`
const ttl = z.int({ error: ttlError }).min(MIN_TTL_S, { error: ttlError }).max(MAX_TTL_S, { error: ttlError })
/** Tags are a client's business; anything but a whole number is read as 0, as the official relay does. */
const tag = z
  .unknown()
  .optional()
  .transform((value) => (typeof value === 'number' && Number.isInteger(value) ? value : 0))
const list = <item extends z.ZodType>(item: item, name: string) =>
  z.array(item, { error: `Invalid params: ${name} must be a list of at most ${MAX_BATCH}` }).max(MAX_BATCH, {
    error: `Invalid params: ${name} must be a list of at most ${MAX_BATCH}`,
  })
const params = <shape extends z.ZodRawShape>(shape: shape) => z.object(shape, { error: 'Invalid params: params must be an object' })

const publish = params({ topic, message, ttl, tag })

/**
 * The params of each method the relay serves (extra fields, such as the analytics fields clients
 * spread into publishes, are dropped unread: plain objects are zod's fast path). Looked up by own property only: a method named `toString`
 * or `__proto__` is not found.
 */
export const methodParams = Object.freeze(
  Object.assign(Object.create(null) as Record<never, never>, {
    irn_subscribe: params({ topic }),
    irn_batchSubscribe: params({ topics: list(topic, 'topics') }),
    irn_unsubscribe: params({ topic }),
    irn_batchUnsubscribe: params({ subscriptions: list(params({ topic }), 'subscriptions') }),
    irn_publish: publish,
    irn_batchPublish: params({ messages: list(publish, 'messages') }),
    irn_batchFetchMessages: params({ topics: list(topic, 'topics') }),
    wc_proposeSession: params({ pairingTopic: topic, sessionProposal: message, ttl: ttl.default(300) }),
    wc_approveSession: params({
      sessionTopic: topic,
      pairingTopic: topic,
      sessionProposalResponse: message,
      sessionSettlementRequest: message,
      ttl: ttl.default(300),
    }),
  }),
)

export type Method = keyof typeof methodParams
export type ParamsOf<method extends Method> = z.output<(typeof methodParams)[method]>
export type PublishParams = z.output<typeof publish>

export const isMethod = (name: string): name is Method => Object.hasOwn(methodParams, name)

/** A request: `method` present; `id` echoed in the answer. */
export const requestSchema = z.object({
  id: z.union([z.number(), z.string()], { error: 'Invalid request: id must be a number or a string' }),
  method: z.string({ error: 'Invalid request: method is missing' }),
  params: z.unknown().optional(),
})

/** The answer to one of our pushes: our number `id`, no `method`. */
export const ackSchema = z.object({ id: z.number(), result: z.unknown().optional(), error: z.unknown().optional() })

const TOPIC = /^[0-9a-f]{64}$/

/** A string that goes into JSON as it is, between quotes: printable ASCII without `"` or a backslash (base64, hex). */
export const JSON_SAFE = /^[\x20\x21\x23-\x5b\x5d-\x7e]*$/
/** The only ack our and the official clients send, `{"id":N,"jsonrpc":"2.0","result":true}`, around its id. */
const ACK_HEAD = Buffer.from('{"id":')
const ACK_TAIL = Buffer.from(',"jsonrpc":"2.0","result":true}')
const ACK_MAX_DIGITS = 16

/**
 * The id of a frame that is exactly the common ack, read from its bytes without decoding or parsing
 * it; undefined for any other frame, which then goes through `JSON.parse` and `ackSchema` (half the
 * frames a relay reads are acks, and this one form is all clients send).
 */
export function plainAckId(frame: Uint8Array, start = 0, end = frame.length): number | undefined {
  const digits = end - start - ACK_HEAD.length - ACK_TAIL.length
  // A publish is far longer: its length alone turns it away.
  if (digits < 1 || digits > ACK_MAX_DIGITS) return undefined
  for (let i = 0; i < ACK_HEAD.length; i++) if (frame[start + i] !== ACK_HEAD[i]) return undefined
  const tail = start + ACK_HEAD.length + digits
  for (let i = 0; i < ACK_TAIL.length; i++) if (frame[tail + i] !== ACK_TAIL[i]) return undefined
  // A JSON number: digits, no leading zero unless it is 0.
  if (digits > 1 && frame[start + ACK_HEAD.length] === 48) return undefined
  let id = 0
  for (let i = start + ACK_HEAD.length; i < tail; i++) {
    const digit = frame[i]! - 48
    if (digit < 0 || digit > 9) return undefined
    id = id * 10 + digit
  }
  return id
}

/**
 * An `irn_publish` request `requestSchema` and the publish params schema would both accept, checked
 * by hand and answered with the same output (`tag` read as 0 unless a whole number); undefined for
 * anything else, which then goes through the schemas for its error. Publishes are most frames a
 * relay reads: this checks exactly what the schemas check without building their result objects.
 */
export function plainPublish(payload: unknown): { id: number | string; params: PublishParams } | undefined {
  if (typeof payload !== 'object' || payload === null || Array.isArray(payload)) return undefined
  const { id, method, params } = payload as { id?: unknown; method?: unknown; params?: unknown }
  if (method !== 'irn_publish' || (typeof id !== 'number' && typeof id !== 'string') || typeof params !== 'object' || params === null || Array.isArray(params))
    return undefined
  const { topic, message, ttl, tag } = params as { topic?: unknown; message?: unknown; ttl?: unknown; tag?: unknown }
  if (typeof topic !== 'string' || !TOPIC.test(topic) || typeof message !== 'string' || message.length === 0) return undefined
  if (typeof ttl !== 'number' || !Number.isSafeInteger(ttl) || ttl < MIN_TTL_S || ttl > MAX_TTL_S) return undefined
  return { id, params: { topic, message, ttl, tag: typeof tag === 'number' && Number.isInteger(tag) ? tag : 0 } }
}

/**
 * A publish in the plain form clients send it, read from the frame's bytes without decoding or
 * parsing the whole frame: no whitespace; keys `id`, `jsonrpc`, `method`, `params` and, inside
 * `params`, `topic`, `message`, `ttl`, `tag`, `prompt`, each once, in any order; a number `id`;
 * strings without escapes; whole numbers without exponent. Answers what `JSON.parse` and
 * `plainPublish` would, and that `message` is `JSON_SAFE`; undefined for any other frame, which then
 * takes the general path (and gets its error there). Most of what a relay reads are such publishes,
 * and reading one this way makes two strings instead of the frame's text and a tree of objects.
 */
export function readPlainPublish(frame: Buffer, start: number, end: number): { id: number; params: PublishParams } | undefined {
  at = start
  if (frame[at++] !== OPEN) return undefined
  let id = -1
  let method = false
  let params: PublishParams | undefined
  let seen = 0
  for (;;) {
    const key = readKey(frame, end, ENVELOPE_KEYS)
    if (key < 0 || seen & (1 << key)) return undefined
    seen |= 1 << key
    if (key === 0) {
      id = readWholeNumber(frame, end, false)
      if (id < 0) return undefined
    } else if (key === 1) {
      if (!matches(frame, end, JSONRPC) && readPlainString(frame, end) === undefined) return undefined
    } else if (key === 2) {
      method = matches(frame, end, PUBLISH)
      if (!method) return undefined
    } else {
      params = readPublishParams(frame, end)
      if (!params) return undefined
    }
    const next = frame[at++]
    if (next === COMMA) continue
    if (next !== CLOSE || at !== end || id < 0 || !method || !params) return undefined
    return { id, params }
  }
}

const [OPEN, CLOSE, QUOTE, COMMA, MINUS, ZERO] = [0x7b, 0x7d, 0x22, 0x2c, 0x2d, 0x30]
const keys = (...names: string[]) => names.map((name) => Buffer.from(`"${name}":`))
const ENVELOPE_KEYS = keys('id', 'jsonrpc', 'method', 'params')
const PARAM_KEYS = keys('topic', 'message', 'ttl', 'tag', 'prompt')
const PUBLISH = Buffer.from('"irn_publish"')
const JSONRPC = Buffer.from('"2.0"')
const [TRUE, FALSE] = [Buffer.from('true'), Buffer.from('false')]
/** Digits of the longest whole number read here (clients' ids have 16); beyond it, or beyond a safe integer, the general path reads it. */
const MAX_DIGITS = 16
/** Where the reader is in the frame: it runs synchronously, start to end, one frame at a time. */
let at = 0

function readPublishParams(frame: Buffer, end: number): PublishParams | undefined {
  if (frame[at++] !== OPEN) return undefined
  let topic: string | undefined
  let message: string | undefined
  let ttl = -1
  let tag = 0
  let seen = 0
  for (;;) {
    const key = readKey(frame, end, PARAM_KEYS)
    if (key < 0 || seen & (1 << key)) return undefined
    seen |= 1 << key
    if (key === 0) {
      topic = readPlainString(frame, end)
      if (topic === undefined || !TOPIC.test(topic)) return undefined
    } else if (key === 1) {
      message = readPlainString(frame, end)
      if (!message) return undefined
    } else if (key === 2) {
      ttl = readWholeNumber(frame, end, false)
      if (ttl < MIN_TTL_S || ttl > MAX_TTL_S) return undefined
    } else if (key === 3) {
      tag = readWholeNumber(frame, end, true)
      if (Number.isNaN(tag)) return undefined
    } else if (!matches(frame, end, TRUE) && !matches(frame, end, FALSE)) return undefined
    const next = frame[at++]
    if (next === COMMA) continue
    if (next !== CLOSE || topic === undefined || message === undefined || ttl < 0) return undefined
    return { topic, message, ttl, tag }
  }
}

/** The index of the key (with its quotes and colon) at the cursor, moving past it; -1 for another. */
function readKey(frame: Buffer, end: number, candidates: readonly Buffer[]): number {
  for (let index = 0; index < candidates.length; index++) if (matches(frame, end, candidates[index]!)) return index
  return -1
}

/** Whether `bytes` are at the cursor, moving past them if so. */
function matches(frame: Buffer, end: number, bytes: Buffer): boolean {
  if (at + bytes.length > end) return false
  for (let i = 0; i < bytes.length; i++) if (frame[at + i] !== bytes[i]) return false
  at += bytes.length
  return true
}

/**
 * A string of `JSON_SAFE` bytes at the cursor, the cursor moved past its closing quote; undefined
 * for anything else (an escape, a control or non-ASCII byte, no closing quote before `end`). The
 * quote is found and the text checked by native code, not byte by byte here.
 */
function readPlainString(frame: Buffer, end: number): string | undefined {
  if (frame[at] !== QUOTE) return undefined
  const close = frame.indexOf(QUOTE, at + 1)
  if (close < 0 || close >= end) return undefined
  // Read as latin1: a non-ASCII byte becomes a character JSON_SAFE refuses.
  const text = frame.toString('latin1', at + 1, close)
  if (!JSON_SAFE.test(text)) return undefined
  at = close + 1
  return text
}

/**
 * A JSON integer at the cursor (no fraction, no exponent, a safe integer of at most MAX_DIGITS
 * digits, negative only when `signed`); -1 (NaN when `signed`) for anything else.
 */
function readWholeNumber(frame: Buffer, end: number, signed: boolean): number {
  const fail = signed ? Number.NaN : -1
  const negative = signed && frame[at] === MINUS
  if (negative) at++
  const from = at
  let value = 0
  for (; at < end; at++) {
    const digit = frame[at]! - ZERO
    if (digit < 0 || digit > 9) break
    value = value * 10 + digit
  }
  const digits = at - from
  if (digits === 0 || digits > MAX_DIGITS || value > Number.MAX_SAFE_INTEGER || (digits > 1 && frame[from] === ZERO)) return fail
  // A fraction or an exponent: the general path reads it.
  const next = frame[at]
  if (next === 0x2e || next === 0x65 || next === 0x45) return fail
  return negative ? -value : value
}

/** The first problem a schema found, as the message a client is told. */
export const firstIssue = (error: z.ZodError, fallback: string) => error.issues[0]?.message ?? fallback
