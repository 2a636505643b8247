#!/usr/bin/env -S node --conditions=source --import tsx
/**
 * The relay on its own, for self-hosting:
 *
 *   node --conditions=source --import tsx packages/relay/src/cli.ts --port 5555 --db relay.db
 *
 * Runs until SIGINT or SIGTERM, then closes every connection and the store and exits 0.
 */
import { parseArgs } from 'node:util'
import { redisStore } from './redisStore.js'
import { createRelay } from './server.js'
import { sqliteStore } from './sqliteStore.js'
import { memoryStore, type RelayStore } from './store.js'

const usage = `Usage: latchkey-relay [options]

  --port <n>              port to listen on (PORT, default 5555)
  --host <address>        address to listen on (HOST, default 127.0.0.1)
  --db <path>             SQLite file for stored messages (RELAY_DB, default relay.db)
  --memory                keep messages in memory only
  --redis <url>           keep messages in Redis, shared with other relay nodes (REDIS_URL)
  --rpc <chainId>=<url>   a chain behind POST /v1/?chainId=…, repeatable
                          (e.g. --rpc eip155:31337=http://127.0.0.1:8545)
  -h, --help              this text`

/** Exits with a message: 2 for a usage error, 1 for a failure to start. */
function exit(code: 1 | 2, message: string): never {
  console.error(code === 2 ? `${message}\n\n${usage}` : message)
  process.exit(code)
}

let args: ReturnType<typeof parse>
function parse() {
  return parseArgs({
    options: {
      port: { type: 'string' },
      host: { type: 'string' },
      db: { type: 'string' },
      memory: { type: 'boolean' },
      redis: { type: 'string' },
      rpc: { type: 'string', multiple: true },
      help: { type: 'boolean', short: 'h' },
    },
    strict: true,
    allowPositionals: false,
  }).values
}
try {
  args = parse()
} catch (error) {
  exit(2, (error as Error).message)
}
if (args.help) {
  console.log(usage)
  process.exit(0)
}

/** An environment variable, when set to something. */
const env = (name: string) => process.env[name] || undefined

const portText = args.port ?? env('PORT') ?? '5555'
const port = Number(portText)
if (!/^\d+$/.test(portText) || port < 1 || port > 65_535) exit(2, `--port must be a port number from 1 to 65535, got "${portText}"`)
const host = args.host ?? env('HOST') ?? '127.0.0.1'
const redisUrl = args.redis ?? env('REDIS_URL')
if ([args.memory, args.db !== undefined, args.redis !== undefined].filter(Boolean).length > 1) exit(2, 'Choose one store: --db, --memory or --redis')

const rpc: Record<string, string> = {}
for (const entry of args.rpc ?? []) {
  const match = /^([-a-z0-9]{3,8}:[-_a-zA-Z0-9]{1,32})=(https?:\/\/.+)$/.exec(entry)
  if (!match) exit(2, `--rpc must look like eip155:1=https://rpc.example, got "${entry}"`)
  rpc[match[1]!] = match[2]!
}

let store: RelayStore
let storeName: string
try {
  if (args.memory) [store, storeName] = [memoryStore(), 'memory']
  else if (redisUrl && args.db === undefined) [store, storeName] = [await redisStore(redisUrl), `redis ${redisUrl}`]
  else {
    const path = args.db ?? env('RELAY_DB') ?? 'relay.db'
    ;[store, storeName] = [sqliteStore(path), `sqlite ${path}`]
  }
} catch (error) {
  exit(1, `Could not open the store: ${(error as Error).message}`)
}

const relay = createRelay({ port, host, store, rpc })
try {
  await relay.start()
} catch (error) {
  await store.close()
  const code = (error as NodeJS.ErrnoException).code
  exit(
    1,
    code === 'EADDRINUSE' ? `Port ${port} on ${host} is in use; choose another with --port or PORT` : `Could not start the relay: ${(error as Error).message}`,
  )
}

// Installed before the line below: whoever waits for it may signal at once.
let stopping = false
for (const signal of ['SIGINT', 'SIGTERM'] as const)
  process.on(signal, () => {
    if (stopping) return
    stopping = true
    void relay
      .stop()
      .then(() => store.close())
      .then(
        () => process.exit(0),
        (error: unknown) => exit(1, `The relay did not stop cleanly: ${(error as Error).message}`),
      )
  })
console.log(`Relay listening on ${relay.url} (store: ${storeName})`)
