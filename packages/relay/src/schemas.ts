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

/** The first problem a schema found, as the message a client is told. */
export const firstIssue = (error: z.ZodError, fallback: string) => error.issues[0]?.message ?? fallback
