// Entry point of @latchkey/relay.

export { type ConnectionLimits, DEFAULT_MAX_CONNECTIONS, DEFAULT_MAX_CONNECTIONS_PER_IP } from './limits.js'
export {
  DEFAULT_MAX_BUFFERED_BYTES,
  DEFAULT_MAX_BUFFERED_BYTES_PER_IP,
  DEFAULT_MAX_BUFFERED_BYTES_TOTAL,
  DEFAULT_MAX_UNACKED_BYTES,
  DEFAULT_MAX_UNACKED_MESSAGES,
} from './outbound.js'
export {
  DEFAULT_MAX_STORED_BYTES,
  DEFAULT_MAX_STORED_BYTES_PER_CLIENT,
  DEFAULT_MAX_STORED_BYTES_PER_TOPIC,
  DEFAULT_MAX_STORED_MESSAGES_PER_TOPIC,
  MESSAGE_OVERHEAD_BYTES,
  QuotaExceededError,
  type QuotaScope,
  type StorageQuotas,
} from './quota.js'
export { type RedisStoreOptions, redisStore } from './redisStore.js'
export { createRelay, type Relay, RelayCloseCode, RelayErrorCode, type RelayLimits, type RelayOptions } from './server.js'
export { sqliteStore } from './sqliteStore.js'
export { type LocalStoreOptions, memoryStore, type RelayStore, type StoredMessage } from './store.js'
