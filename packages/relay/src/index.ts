// Entry point of @latchkey/relay.
export { createRelay, type Relay, RelayCloseCode, RelayErrorCode, type RelayLimits, type RelayOptions } from './server.js'
export { type RedisStoreOptions, redisStore } from './redisStore.js'
export { sqliteStore } from './sqliteStore.js'
export { memoryStore, type RelayStore, type StoredMessage } from './store.js'
