/**
 * The reference of `bench:relay`: a plain `ws` fan-out server with no auth, no storage and no
 * acks. `{ sub: topic }` subscribes; `{ topic, message }` goes to the topic's other subscribers.
 * Run as a child process: prints `listening <port>` when ready.
 */
import { type WebSocket, WebSocketServer } from 'ws'

const server = new WebSocketServer({ host: '127.0.0.1', port: Number(process.argv[2] ?? 0) })
const subscribers = new Map<string, Set<WebSocket>>()

server.on('connection', (socket) => {
  const topics = new Set<string>()
  socket.on('message', (data) => {
    const frame = JSON.parse(data.toString()) as { sub?: string; topic?: string; message?: string }
    if (frame.sub) {
      topics.add(frame.sub)
      const set = subscribers.get(frame.sub) ?? new Set()
      set.add(socket)
      subscribers.set(frame.sub, set)
      socket.send(JSON.stringify({ subscribed: frame.sub }))
      return
    }
    const text = JSON.stringify({ topic: frame.topic, message: frame.message })
    for (const subscriber of subscribers.get(frame.topic ?? '') ?? []) if (subscriber !== socket) subscriber.send(text)
  })
  socket.on('close', () => {
    for (const topic of topics) subscribers.get(topic)?.delete(socket)
  })
})
server.on('listening', () => {
  const address = server.address()
  console.log(`listening ${typeof address === 'object' && address ? address.port : ''}`)
})
// A clean exit on the bench's SIGTERM, so `BENCH_NODE_FLAGS=--cpu-prof` writes this process's profile too.
process.on('SIGTERM', () => server.close(() => process.exit(0)))
