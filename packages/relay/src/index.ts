// Entry point of @latchkey/relay.

export { type RedisStoreOptions, redisStore } from './redisStore.js'
export { createRelay, type Relay, RelayCloseCode, RelayErrorCode, type RelayLimits, type RelayOptions } from './server.js'
export { sqliteStore } from './sqliteStore.js'
export { memoryStore, type RelayStore, type StoredMessage } from './store.js'
