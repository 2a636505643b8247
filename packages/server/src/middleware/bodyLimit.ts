import type { MiddlewareHandler } from 'hono'
import { ServerError } from '../errors.js'

/** The error every route answers for a body over the limit: 413 `body_too_large`. */
export const bodyTooLarge = (maxBytes: number) => new ServerError(413, 'body_too_large', `The request body is larger than ${maxBytes} bytes`)

/**
 * Caps request bodies at `maxBytes` while they stream in, whatever `content-length` says: a
 * declared length over the cap is refused before a byte is read, and every body (chunked, or with
 * a length that understates it) is counted as the route reads it; the read fails with 413
 * `body_too_large` at the first byte past the cap and the rest is never pulled.
 *
 * @example
 * app.use('*', bodyLimit(LIMITS.bodyBytes))
 */
export function bodyLimit(maxBytes: number): MiddlewareHandler {
  return async (c, next) => {
    const request = c.req.raw
    if (!request.body) return next()
    const declared = request.headers.get('content-length')
    if (declared !== null && /^\d+$/.test(declared.trim()) && Number(declared) > maxBytes) throw bodyTooLarge(maxBytes)
    let received = 0
    const counted = request.body.pipeThrough(
      new TransformStream<Uint8Array, Uint8Array>({
        transform(chunk, controller) {
          received += chunk.byteLength
          // Erroring the stream cancels the source: nothing more is read from the socket.
          if (received > maxBytes) controller.error(bodyTooLarge(maxBytes))
          else controller.enqueue(chunk)
        },
      }),
    )
    c.req.raw = new Request(request, { body: counted, duplex: 'half' } as RequestInit)
    return next()
  }
}
