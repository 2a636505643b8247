import type { MiddlewareHandler } from 'hono'
import { GrpcCode, KmsError } from '../errors.js'

/** Largest request body the API accepts by default, in bytes. */
export const DEFAULT_MAX_BODY_BYTES = 256 * 1024

const tooLarge = (maxBytes: number) => new KmsError(GrpcCode.invalidArgument, `request body too large: at most ${maxBytes} bytes`, [], 413)

/**
 * Reads the request body into `c.var.raw`, counting bytes as they stream in: a declared
 * content-length over the limit is refused unread, and a body that grows past the limit (chunked,
 * or longer than it declared) is refused at the chunk that crosses it, the rest never read.
 *
 * @example
 * app.post('/public/v1/*', bodyLimit(256 * 1024), handler)
 */
export function bodyLimit(maxBytes: number): MiddlewareHandler<{ Variables: { raw: Uint8Array } }> {
  return async (c, next) => {
    const declared = c.req.header('content-length')
    if (declared !== undefined && Number(declared) > maxBytes) throw tooLarge(maxBytes)
    c.set('raw', await readAtMost(c.req.raw, maxBytes))
    await next()
  }
}

async function readAtMost(request: Request, maxBytes: number): Promise<Uint8Array> {
  if (!request.body) return new Uint8Array()
  const reader = request.body.getReader()
  const chunks: Uint8Array[] = []
  let length = 0
  for (;;) {
    const { done, value } = await reader.read()
    if (done) break
    length += value.byteLength
    if (length > maxBytes) {
      // The rest is not read: the connection is answered and its body dropped.
      await reader.cancel().catch(() => {})
      throw tooLarge(maxBytes)
    }
    chunks.push(value)
  }
  const raw = new Uint8Array(length)
  let offset = 0
  for (const chunk of chunks) {
    raw.set(chunk, offset)
    offset += chunk.byteLength
  }
  return raw
}
