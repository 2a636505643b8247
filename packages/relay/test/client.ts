import { randomBytes } from 'node:crypto'
import { signRelayJwt } from '@latchkey/walletconnect'
import WebSocket from 'ws'

export type Push = { id: number; params: { id: string; data: { topic: string; message: string; publishedAt: number; tag: number; attestation: string } } }

/**
 * A bare relay client over `ws`, for tests: JSON-RPC requests, pushed messages in a queue that can
 * be awaited, and automatic acks (or none, to test redelivery).
 */
export async function connectClient(url: string, options: { seed?: string; token?: string; ack?: boolean; onPush?: (push: Push) => void } = {}) {
  const seed = options.seed ?? randomBytes(32).toString('hex')
  const token = options.token ?? signRelayJwt({ seed, aud: url })
  const socket = new WebSocket(`${url}/?auth=${encodeURIComponent(token)}&projectId=local`)
  const pending = new Map<number, { resolve(value: unknown): void; reject(error: Error & { code?: number }): void }>()
  const pushes: Push[] = []
  const waiters: ((push: Push) => void)[] = []
  let nextId = 1
  const closed = new Promise<{ code: number; reason: string }>((resolve) =>
    socket.on('close', (code, reason) => {
      // Requests a closed socket will never have answered fail, as in a real client.
      for (const entry of pending.values()) entry.reject(Object.assign(new Error(`closed ${code}`), { code }))
      pending.clear()
      resolve({ code, reason: reason.toString() })
    }),
  )
  socket.on('error', () => undefined)
  socket.on('message', (data) => {
    const payload = JSON.parse(data.toString())
    if (payload.method === 'irn_subscription') {
      if (options.ack !== false) socket.send(JSON.stringify({ id: payload.id, jsonrpc: '2.0', result: true }))
      if (options.onPush) return options.onPush(payload)
      const waiter = waiters.shift()
      if (waiter) waiter(payload)
      else pushes.push(payload)
      return
    }
    const entry = pending.get(payload.id)
    if (!entry) return
    pending.delete(payload.id)
    if (payload.error) entry.reject(Object.assign(new Error(payload.error.message), { code: payload.error.code }))
    else entry.resolve(payload.result)
  })
  const opened = await Promise.race([new Promise<boolean>((resolve) => socket.once('open', () => resolve(true))), closed.then(() => false)])
  return {
    seed,
    socket,
    closed,
    opened,
    request<result = unknown>(method: string, params: unknown): Promise<result> {
      const id = nextId++
      if (socket.readyState !== WebSocket.OPEN) return Promise.reject(new Error('not open'))
      socket.send(JSON.stringify({ id, jsonrpc: '2.0', method, params }))
      return new Promise<result>((resolve, reject) => pending.set(id, { resolve: resolve as (value: unknown) => void, reject }))
    },
    /** The next pushed message (already received or still to come). */
    nextPush(): Promise<Push> {
      const ready = pushes.shift()
      return ready ? Promise.resolve(ready) : new Promise((resolve) => waiters.push(resolve))
    },
    /** Pushes received and not yet taken. */
    unread: () => pushes.length,
    close() {
      socket.close()
      return closed
    },
  }
}
