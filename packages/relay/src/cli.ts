#!/usr/bin/env node
/**
 * `latchkey-relay`: the relay on its own, for self-hosting. Settings by flag or environment
 * variable (`latchkey-relay --help`), JSON logs on standard output, `GET /healthz` and
 * `GET /readyz`, a graceful stop on SIGTERM or SIGINT. The package README has the details.
 */
import { createRequire } from 'node:module'
import { resolve } from 'node:path'
import {
  baseSettings,
  custom,
  integer,
  list,
  runService,
  SettingsError,
  secretUrl,
  settingLabel,
  text,
  toggle,
  url,
  withoutCredentials,
} from '@latchkey/service'
import { DEFAULT_MAX_CONNECTIONS, DEFAULT_MAX_CONNECTIONS_PER_IP } from './limits.js'
import {
  DEFAULT_MAX_BUFFERED_BYTES,
  DEFAULT_MAX_BUFFERED_BYTES_PER_IP,
  DEFAULT_MAX_BUFFERED_BYTES_TOTAL,
  DEFAULT_MAX_UNACKED_BYTES,
  DEFAULT_MAX_UNACKED_MESSAGES,
} from './outbound.js'
import {
  DEFAULT_MAX_STORED_BYTES,
  DEFAULT_MAX_STORED_BYTES_PER_CLIENT,
  DEFAULT_MAX_STORED_BYTES_PER_TOPIC,
  DEFAULT_MAX_STORED_MESSAGES_PER_TOPIC,
  type StorageQuotas,
} from './quota.js'
import { redisStore } from './redisStore.js'
import { createRelay } from './server.js'
import { sqliteStore } from './sqliteStore.js'
import { memoryStore, type RelayStore } from './store.js'

const { version } = createRequire(import.meta.url)('../package.json') as { version: string }

const CHAIN_ID = /^[-a-z0-9]{3,8}:[-_a-zA-Z0-9]{1,32}$/

const settings = {
  ...baseSettings({ port: 5555 }),
  db: text({
    flag: 'db',
    env: 'LATCHKEY_RELAY_DB',
    valueName: '<path>',
    description:
      'Keep messages in this SQLite file. Without a store setting: relay.db in the working directory (development only); production needs --db, --redis or --memory.',
  }),
  redis: url({
    flag: 'redis',
    protocols: ['redis:', 'rediss:'],
    description:
      'Keep messages in Redis, shared with every relay node given the same URL (redis:// or rediss://). A flag shows in the process list: a URL with a password goes in REDIS_URL or a file.',
  }),
  redisUrl: secretUrl({
    env: 'REDIS_URL',
    fileFlag: 'redis-url-file',
    protocols: ['redis:', 'rediss:'],
    description: 'As --redis, from the variable or a file (a URL with a password, mounted as a secret).',
  }),
  memory: toggle({ flag: 'memory', env: 'LATCHKEY_RELAY_MEMORY', description: 'Keep messages in memory only: pending messages are lost on a restart.' }),
  rpc: list(
    custom({
      flag: 'rpc',
      env: 'LATCHKEY_RELAY_RPC',
      valueName: '<chainId>=<url>',
      description: 'A chain behind POST /v1/?chainId=…, e.g. eip155:1=https://rpc.example (its URL may hold an API key: never logged).',
      convert: (entry, label): [string, string] => {
        const split = entry.indexOf('=')
        const [chainId, rpcUrl] = [entry.slice(0, split), entry.slice(split + 1)]
        if (split < 0 || !CHAIN_ID.test(chainId))
          throw new SettingsError(`${label} must look like eip155:1=https://rpc.example, got ${JSON.stringify(withoutCredentials(entry))}`)
        let parsed: URL | undefined
        try {
          parsed = new URL(rpcUrl)
        } catch {
          parsed = undefined
        }
        if (!parsed || (parsed.protocol !== 'http:' && parsed.protocol !== 'https:'))
          throw new SettingsError(`${label}: the RPC of ${chainId} must be an http:// or https:// URL`)
        return [chainId, rpcUrl]
      },
      secretsOf: ([, rpcUrl]) => [rpcUrl],
    }),
  ),
  projectIds: list(
    text({
      flag: 'project-id',
      env: 'LATCHKEY_RELAY_PROJECT_IDS',
      valueName: '<id>',
      description: 'A project id POST /v1/ accepts: when any is given, a request without one of them is refused. Default: any, or none.',
    }),
  ),
  upstreamTimeout: integer({
    flag: 'upstream-timeout',
    env: 'LATCHKEY_RELAY_UPSTREAM_TIMEOUT',
    valueName: '<ms>',
    min: 1,
    max: 600_000,
    default: 10_000,
    description: 'Milliseconds a chain RPC may take to answer POST /v1/ before the relay answers with a JSON-RPC error.',
  }),
  rpcRequestsPerSecond: integer({
    flag: 'rpc-requests-per-second',
    env: 'LATCHKEY_RELAY_RPC_REQUESTS_PER_SECOND',
    valueName: '<n>',
    min: 0,
    max: 1_000_000,
    default: 100,
    description: 'JSON-RPC requests one IP address may send POST /v1/ per second (each of a batch counts); past it 429. 0: no limit.',
  }),
  coalesce: integer({
    flag: 'coalesce',
    env: 'LATCHKEY_RELAY_COALESCE',
    valueName: '<µs>',
    min: 0,
    max: 100_000,
    default: 200,
    description:
      'Under sustained load, microseconds the relay waits after a turn of its event loop that read few frames, so the next reads more at once (less CPU per message); 0 never waits.',
  }),
  maxConnections: integer({
    flag: 'max-connections',
    env: 'LATCHKEY_RELAY_MAX_CONNECTIONS',
    valueName: '<n>',
    min: 0,
    max: 10_000_000,
    default: DEFAULT_MAX_CONNECTIONS,
    description: 'Open WebSockets the relay holds at once; an upgrade past it is refused with HTTP 503. 0: no cap.',
  }),
  maxConnectionsPerIp: integer({
    flag: 'max-connections-per-ip',
    env: 'LATCHKEY_RELAY_MAX_CONNECTIONS_PER_IP',
    valueName: '<n>',
    min: 0,
    max: 10_000_000,
    default: DEFAULT_MAX_CONNECTIONS_PER_IP,
    description: 'Open WebSockets from one IP address (IPv6: one /64); an upgrade past it is refused with HTTP 429. 0: no cap (behind a proxy, cap there).',
  }),
  maxBufferedBytes: integer({
    flag: 'max-buffered-bytes',
    env: 'LATCHKEY_RELAY_MAX_BUFFERED_BYTES',
    valueName: '<bytes>',
    // Twice the largest message (512 KiB): a paced backlog writes half of it at a time.
    min: 1024 * 1024,
    max: Number.MAX_SAFE_INTEGER,
    default: DEFAULT_MAX_BUFFERED_BYTES,
    description: 'Bytes one connection may leave unread (a client that does not read); past it the connection is closed with 4009 slow consumer.',
  }),
  maxBufferedBytesPerIp: integer({
    flag: 'max-buffered-bytes-per-ip',
    env: 'LATCHKEY_RELAY_MAX_BUFFERED_BYTES_PER_IP',
    valueName: '<bytes>',
    min: 0,
    max: Number.MAX_SAFE_INTEGER,
    default: DEFAULT_MAX_BUFFERED_BYTES_PER_IP,
    description:
      'Bytes the connections of one IP address (IPv6: one /64) may leave unread together; past it 4009. 0: no cap; else at least --max-buffered-bytes.',
  }),
  maxBufferedBytesTotal: integer({
    flag: 'max-buffered-bytes-total',
    env: 'LATCHKEY_RELAY_MAX_BUFFERED_BYTES_TOTAL',
    valueName: '<bytes>',
    min: 0,
    max: Number.MAX_SAFE_INTEGER,
    default: DEFAULT_MAX_BUFFERED_BYTES_TOTAL,
    description: 'Bytes all connections may leave unread together; past it 4009. 0: no cap; else at least --max-buffered-bytes.',
  }),
  maxUnackedMessages: integer({
    flag: 'max-unacked-messages',
    env: 'LATCHKEY_RELAY_MAX_UNACKED_MESSAGES',
    valueName: '<n>',
    min: 0,
    max: 10_000_000,
    default: DEFAULT_MAX_UNACKED_MESSAGES,
    description: 'Pushes one connection may leave unacknowledged; past it 4009 (they are sent again on its next subscribe). 0: no cap.',
  }),
  maxUnackedBytes: integer({
    flag: 'max-unacked-bytes',
    env: 'LATCHKEY_RELAY_MAX_UNACKED_BYTES',
    valueName: '<bytes>',
    min: 0,
    max: Number.MAX_SAFE_INTEGER,
    default: DEFAULT_MAX_UNACKED_BYTES,
    description: 'Message bytes one connection may leave unacknowledged; past it 4009. 0: no cap.',
  }),
  maxStoredBytes: integer({
    flag: 'max-stored-bytes',
    env: 'LATCHKEY_RELAY_MAX_STORED_BYTES',
    valueName: '<bytes>',
    min: 0,
    max: Number.MAX_SAFE_INTEGER,
    default: DEFAULT_MAX_STORED_BYTES,
    description: 'Bytes of messages the store holds over every topic; a publish past it is refused (-32015). 0: no quota.',
  }),
  maxStoredBytesPerTopic: integer({
    flag: 'max-stored-bytes-per-topic',
    env: 'LATCHKEY_RELAY_MAX_STORED_BYTES_PER_TOPIC',
    valueName: '<bytes>',
    min: 0,
    max: Number.MAX_SAFE_INTEGER,
    default: DEFAULT_MAX_STORED_BYTES_PER_TOPIC,
    description: 'Bytes of messages one topic holds; a publish past it is refused (-32015). 0: no quota.',
  }),
  maxStoredBytesPerClient: integer({
    flag: 'max-stored-bytes-per-client',
    env: 'LATCHKEY_RELAY_MAX_STORED_BYTES_PER_CLIENT',
    valueName: '<bytes>',
    min: 0,
    max: Number.MAX_SAFE_INTEGER,
    default: DEFAULT_MAX_STORED_BYTES_PER_CLIENT,
    description: "Bytes of stored messages one client id's publishes take; a publish past it is refused (-32015). 0: no quota.",
  }),
  maxStoredMessagesPerTopic: integer({
    flag: 'max-stored-messages-per-topic',
    env: 'LATCHKEY_RELAY_MAX_STORED_MESSAGES_PER_TOPIC',
    valueName: '<n>',
    min: 0,
    max: Number.MAX_SAFE_INTEGER,
    default: DEFAULT_MAX_STORED_MESSAGES_PER_TOPIC,
    description: 'Messages one topic holds, whatever their size; a publish past it is refused (-32015). 0: no quota.',
  }),
  audiences: list(
    url({
      flag: 'audience',
      env: 'LATCHKEY_RELAY_AUDIENCES',
      protocols: ['wss:', 'ws:', 'https:', 'http:'],
      production: 'required',
      description:
        'The relay URL clients name in their auth token (its `aud`), e.g. wss://relay.example.com: tokens made for another relay are refused. Default: any.',
    }),
  ),
}

await runService({
  name: 'latchkey-relay',
  version,
  summary: 'A self-hostable WalletConnect-compatible relay: WebSocket JSON-RPC with store-and-forward, and JSON-RPC over HTTP at POST /v1/?chainId=….',
  settings,
  production(_values, given) {
    // An implicit relay.db in whatever directory the process starts in is a development default.
    const store =
      given.has('db') || given.has('redis') || given.has('redisUrl') || given.has('memory')
        ? []
        : [`a store: ${settingLabel(settings.db)}, ${settingLabel(settings.redis)} (or ${settingLabel(settings.redisUrl)}) or ${settingLabel(settings.memory)}`]
    // Chains behind POST /v1/ without a project id are an RPC proxy open to anyone, on the operator's key.
    const project = given.has('rpc') && !given.has('projectIds') ? [`${settingLabel(settings.projectIds)} (POST /v1/ forwards to --rpc chains)`] : []
    return [...store, ...project]
  },
  notes: [
    'Health: GET /healthz answers 200 while the process runs; GET /readyz answers 200 when the store answers, else 503 with {"status":"unavailable","reason":…}.',
  ],
  async start(values, { logger, metrics }) {
    const chosen = (['db', 'redis', 'redisUrl', 'memory'] as const).filter((key) => (key === 'memory' ? values.memory : values[key] !== undefined))
    const redisUrl = values.redis ?? values.redisUrl
    // The store is named by host and port: the whole URL is a secret (it may hold a password) and would be logged as [redacted].
    if (chosen.length > 1) throw new SettingsError(`choose one store, not ${chosen.map((key) => settingLabel(settings[key])).join(' and ')}`)
    for (const key of ['maxBufferedBytesPerIp', 'maxBufferedBytesTotal'] as const)
      if (values[key] > 0 && values[key] < values.maxBufferedBytes)
        throw new SettingsError(
          `${settingLabel(settings[key])} must be 0 (no cap) or at least ${settingLabel(settings.maxBufferedBytes)} (${values.maxBufferedBytes})`,
        )
    let store: RelayStore
    let storeName: string
    const quotas: StorageQuotas = {
      maxStoredBytes: values.maxStoredBytes,
      maxStoredBytesPerTopic: values.maxStoredBytesPerTopic,
      maxStoredBytesPerClient: values.maxStoredBytesPerClient,
      maxStoredMessagesPerTopic: values.maxStoredMessagesPerTopic,
    }
    try {
      if (values.memory) [store, storeName] = [memoryStore({ quotas }), 'memory']
      else if (redisUrl) [store, storeName] = [await redisStore(redisUrl, { quotas, metrics }), `redis ${new URL(redisUrl).host}`]
      else {
        const path = resolve(values.db ?? 'relay.db')
        ;[store, storeName] = [sqliteStore(path, { quotas }), `sqlite ${path}`]
      }
    } catch (error) {
      throw new Error(`could not open the store: ${(error as Error).message}`)
    }
    const relay = createRelay({
      port: values.port,
      host: values.host,
      store,
      rpc: Object.fromEntries(values.rpc),
      projectIds: values.projectIds.length ? values.projectIds : undefined,
      upstreamTimeoutMs: values.upstreamTimeout,
      maxRpcRequestsPerSecond: values.rpcRequestsPerSecond,
      coalesceMicros: values.coalesce,
      audiences: values.audiences.length ? values.audiences : undefined,
      limits: {
        maxConnections: values.maxConnections,
        maxConnectionsPerIp: values.maxConnectionsPerIp,
        maxBufferedBytes: values.maxBufferedBytes,
        maxBufferedBytesPerIp: values.maxBufferedBytesPerIp,
        maxBufferedBytesTotal: values.maxBufferedBytesTotal,
        maxUnackedMessages: values.maxUnackedMessages,
        maxUnackedBytes: values.maxUnackedBytes,
      },
      logger,
      metrics,
    })
    try {
      await relay.start()
    } catch (error) {
      await store.close()
      throw error
    }
    logger.info(
      { url: relay.url, store: storeName, chains: values.rpc.map(([chainId]) => chainId), audiences: values.audiences },
      `Relay listening on ${relay.url} (store: ${storeName})`,
    )
    return {
      async stop() {
        await relay.stop()
        await store.close()
      },
      inflight: () => relay.inflight(),
    }
  },
})
