import { IncomingMessage } from 'node:http'
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
 * Over Node's HTTP/1 server (the node adapter's `c.env.incoming`), a body that declares its
 * length is read from the `IncomingMessage` itself, as Node's parser hands it over: no web
 * `Request` or stream is built around it (bench:kms's HTTP stage). Node's parser ends such a body
 * at its declared length, and the bytes are still counted against the limit. Any other body (chunked, or a
 * `Request` from `app.request`) is read from the web stream.
 *
 * @example
 * app.post('/public/v1/*', bodyLimit(256 * 1024), handler)
 */
export function bodyLimit(maxBytes: number): MiddlewareHandler<{ Variables: { raw: Uint8Array } }> {
  return async (c, next) => {
    const declared = c.req.header('content-length')
    if (declared !== undefined && Number(declared) > maxBytes) throw tooLarge(maxBytes)
    const incoming = (c.env as { incoming?: unknown } | undefined)?.incoming
    c.set(
      'raw',
      declared !== undefined && incoming instanceof IncomingMessage && !incoming.readableDidRead
        ? await readIncoming(incoming, maxBytes)
        : await readAtMost(c.req.raw, maxBytes),
    )
    await next()
  }
}

/** The body of Node's request as its parser delivers it, counted against the limit. */
function readIncoming(incoming: IncomingMessage, maxBytes: number): Promise<Uint8Array> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = []
    let length = 0
    const done = () => {
      incoming.off('data', onData)
      incoming.off('end', onEnd)
      incoming.off('error', onError)
      incoming.off('close', onClose)
    }
    const onData = (chunk: Buffer) => {
      length += chunk.byteLength
      if (length > maxBytes) {
        done()
        // The rest is not read: the connection is answered and its body dropped.
        incoming.pause()
        reject(tooLarge(maxBytes))
        return
      }
      chunks.push(chunk)
    }
    const onEnd = () => {
      done()
      resolve(chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, length))
    }
    const onError = (error: Error) => {
      done()
      reject(error)
    }
    // Closed before its end: the client went away mid-body.
    const onClose = () => {
      done()
      reject(new Error('the request body ended early: the client closed the connection'))
    }
    incoming.on('data', onData)
    incoming.on('end', onEnd)
    incoming.on('error', onError)
    incoming.on('close', onClose)
  })
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
