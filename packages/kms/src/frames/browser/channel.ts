import { DEFAULT_EMBEDDED_KEY_TTL_MS } from './embeddedKey.js'
import { FrameError } from './encoding.js'
import type { FrameKey, FrameKeyStore } from './frameKeys.js'

// The @turnkey/iframe-stamper protocol, frame side (research/turnkey-api.md §5):
//  1. The embedding page posts {type: TURNKEY_INIT_MESSAGE_CHANNEL, dangerouslyOverrideIframeKeyTtl?}
//     to this frame's origin on `load`, transferring a MessagePort.
//  2. The frame answers on that port with {type: PUBLIC_KEY_READY, value: <embedded key, uncompressed hex>}.
//  3. Every later request comes over the port as {type, requestId, value?, …}; the frame answers
//     {type, value, requestId}, or {type: ERROR, value: <message>, requestId}; an error that
//     carries an EIP-1193 code (the consent frame's) is {type: ERROR, value: {code, message}, requestId}.
// Unlike the hosted frames, the channel is opened only by the embedding page itself, from an
// allowed origin, when this frame is not nested deeper; everything else is refused with a
// legacy {type: ERROR} message to the sender (and a console warning), so a refused page can tell.

export const INIT_MESSAGE = 'TURNKEY_INIT_MESSAGE_CHANNEL'

/** A request that arrived over the channel; fields other than type and requestId are unchecked. */
export type FrameRequest = {
  readonly type: string
  readonly requestId: string
  readonly value?: unknown
  readonly organizationId?: unknown
  readonly userId?: unknown
  readonly keyFormat?: unknown
  readonly address?: unknown
}

export type FrameContext = {
  /** Origin of the page that opened the channel. */
  readonly parentOrigin: string
  /** The page's key (the embedded key, or the consent frame's signing key); fails when it was reset or has expired. */
  embeddedKey(): Promise<FrameKey>
  /** Forgets the key (the export frame does this once it has shown a secret). */
  resetEmbeddedKey(): Promise<void>
}

export type FrameReply = { readonly type: string; readonly value: unknown }
export type FrameHandler = (request: FrameRequest, context: FrameContext) => Promise<FrameReply>

/** What the frame needs from its window; a plain object in unit tests. */
export type FrameWindow = {
  readonly parent: unknown
  readonly top: unknown
  readonly location: { readonly ancestorOrigins?: { readonly length: number; item(index: number): string | null } }
  addEventListener(type: 'message', listener: (event: MessageEvent) => void): void
}

export type OpenFrameChannelParameters = {
  window: FrameWindow
  /** Page name, in messages: `auth`, `recovery`, `export`, `import`, `consent`. */
  page: string
  /** Origins allowed to embed this frame and open its channel. */
  parentOrigins: readonly string[]
  /** The key PUBLIC_KEY_READY announces and the *_EMBEDDED_KEY requests manage. */
  keys: FrameKeyStore
  /** Requests this page answers besides the embedded-key ones every page answers. */
  handlers: Readonly<Record<string, FrameHandler>>
  /** Called (and awaited) when the parent resets the embedded key: drop whatever it protected. */
  onReset?: ((parentOrigin: string) => void | Promise<void>) | undefined
  /** Where refusals and unexpected failures are logged. Default: the console. */
  log?: ((message: string) => void) | undefined
}

/**
 * Why this frame must not run where it is, if it must not: not framed, framed inside another
 * frame, or embedded by a page whose origin is not allowed (where the browser tells us).
 */
export function framingProblem(window: FrameWindow, parentOrigins: readonly string[]): string | undefined {
  if (window.parent === window) return 'this page runs only inside a frame of an allowed app'
  if (window.top !== window.parent) return 'this frame refuses to run inside a nested frame'
  const ancestors = window.location.ancestorOrigins
  if (ancestors) {
    if (ancestors.length > 1) return 'this frame refuses to run inside a nested frame'
    const embedder = ancestors.item(0)
    if (embedder !== null && !parentOrigins.includes(embedder)) return `origin ${embedder} is not allowed to embed this frame`
  }
  return undefined
}

/**
 * Listens for the embedding page's channel and answers its requests one at a time, in order.
 * Returns why the frame refuses to run, if it does (the page then shows nothing but that).
 *
 * @example
 * openFrameChannel({ window, page: 'auth', parentOrigins, keys, handlers: { STAMP_REQUEST: stamp } })
 */
export function openFrameChannel(parameters: OpenFrameChannelParameters): { refused: string | undefined } {
  const { window, page, parentOrigins, keys } = parameters
  const log = parameters.log ?? ((message: string) => console.warn(`[latchkey ${page} frame] ${message}`))
  const refused = framingProblem(window, parentOrigins)
  let open: { port: MessagePort; parentOrigin: string; ttlMs: number } | undefined

  window.addEventListener('message', (event) => {
    const data: unknown = event.data
    if (!isObject(data) || data['type'] !== INIT_MESSAGE) return
    const refusal = refused ?? refuseInit(event, data)
    if (refusal) {
      log(`refused a channel from ${event.origin}: ${refusal}`)
      answerRefusal(event, refusal)
      return
    }
    const ttl = data['dangerouslyOverrideIframeKeyTtl']
    open = { port: event.ports[0]!, parentOrigin: event.origin, ttlMs: typeof ttl === 'number' ? ttl : DEFAULT_EMBEDDED_KEY_TTL_MS }
    serve(open)
  })

  function refuseInit(event: MessageEvent, data: Record<string, unknown>): string | undefined {
    if (event.source !== window.parent) return 'the channel must be opened by the page that embeds this frame'
    if (!parentOrigins.includes(event.origin)) return `origin ${event.origin} is not allowed to open a channel to this frame`
    if (open) return 'a channel is already open'
    if (!event.ports[0]) return `${INIT_MESSAGE} must transfer a MessagePort`
    const ttl = data['dangerouslyOverrideIframeKeyTtl']
    if (ttl !== undefined && (typeof ttl !== 'number' || !Number.isSafeInteger(ttl) || ttl <= 0))
      return 'dangerouslyOverrideIframeKeyTtl must be a positive whole number of milliseconds'
    return undefined
  }

  function serve(channel: { port: MessagePort; parentOrigin: string; ttlMs: number }) {
    const { port, parentOrigin } = channel
    // Read from storage at each use: it expires there, and another tab may have reset it.
    const context: FrameContext = {
      parentOrigin,
      async embeddedKey() {
        const key = await keys.get(parentOrigin)
        if (!key) throw new FrameError('this frame has no embedded key (it was reset or has expired): initialise a new one')
        return key
      },
      resetEmbeddedKey: () => keys.reset(parentOrigin),
    }
    const common: Record<string, FrameHandler> = {
      async GET_EMBEDDED_PUBLIC_KEY() {
        return { type: 'EMBEDDED_PUBLIC_KEY', value: (await keys.get(parentOrigin))?.publicKeyHex ?? null }
      },
      async INIT_EMBEDDED_KEY() {
        return { type: 'EMBEDDED_PUBLIC_KEY', value: (await keys.getOrCreate(parentOrigin, channel.ttlMs)).publicKeyHex }
      },
      async RESET_EMBEDDED_KEY() {
        await context.resetEmbeddedKey()
        await parameters.onReset?.(parentOrigin)
        return { type: 'EMBEDDED_KEY_RESET', value: true }
      },
    }

    // Requests run one after another, after the key the handshake announces exists.
    let queue = (async () => {
      const key = await keys.getOrCreate(parentOrigin, channel.ttlMs)
      port.postMessage({ type: 'PUBLIC_KEY_READY', value: key.publicKeyHex })
    })().catch((error: unknown) => log(`could not create the embedded key: ${String(error)}`))

    port.onmessage = (event) => {
      queue = queue.then(() => answer(event.data))
    }

    async function answer(data: unknown) {
      if (!isObject(data) || !isShortString(data['type'], 64) || !isShortString(data['requestId'], 128)) {
        log('ignored a message without a type and a requestId')
        return
      }
      const request = data as FrameRequest
      try {
        const handler = Object.hasOwn(common, request.type)
          ? common[request.type]
          : Object.hasOwn(parameters.handlers, request.type)
            ? parameters.handlers[request.type]
            : undefined
        if (!handler) throw new FrameError(`the ${page} frame does not handle ${request.type}`)
        const reply = await handler(request, context)
        port.postMessage({ type: reply.type, value: reply.value, requestId: request.requestId })
      } catch (error) {
        if (!(error instanceof FrameError)) log(`${request.type} failed: ${error instanceof Error ? error.name : 'error'}`)
        const message = error instanceof FrameError ? error.message : `the ${page} frame could not complete ${request.type}`
        const code = error instanceof FrameError ? error.code : undefined
        port.postMessage({ type: 'ERROR', value: code === undefined ? message : { code, message }, requestId: request.requestId })
      }
    }
  }

  return { refused }
}

/** The legacy error reply of the hosted frames, sent only to the window and origin that asked. */
function answerRefusal(event: MessageEvent, message: string) {
  const source = event.source as { postMessage?: (message: unknown, options: { targetOrigin: string }) => void } | null
  if (!source?.postMessage || !event.origin || event.origin === 'null') return
  try {
    source.postMessage({ type: 'ERROR', value: message }, { targetOrigin: event.origin })
  } catch {
    // The sender is gone or is not a window: nobody to tell.
  }
}

const isObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value)
const isShortString = (value: unknown, maxLength: number): value is string => typeof value === 'string' && value.length > 0 && value.length <= maxLength

/** A required string field of a request, at most `maxLength` characters. */
export function stringField(request: FrameRequest, field: 'value' | 'organizationId' | 'userId' | 'keyFormat' | 'address', maxLength = 64 * 1024): string {
  const value = request[field]
  if (typeof value !== 'string' || value.length === 0) throw new FrameError(`${request.type} needs ${field} (a string)`)
  if (value.length > maxLength) throw new FrameError(`${request.type}: ${field} is longer than ${maxLength} characters`)
  return value
}
