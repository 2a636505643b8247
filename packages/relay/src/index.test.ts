import { expect, test } from 'vitest'

// The public names of @latchkey/relay: an API change shows in review as a change to this list.
test('default: exports', async () => {
  expect(Object.keys(await import('./index.js')).sort()).toMatchInlineSnapshot(`
    [
      "DEFAULT_MAX_BUFFERED_BYTES",
      "DEFAULT_MAX_BUFFERED_BYTES_PER_IP",
      "DEFAULT_MAX_BUFFERED_BYTES_TOTAL",
      "DEFAULT_MAX_CONNECTIONS",
      "DEFAULT_MAX_CONNECTIONS_PER_IP",
      "DEFAULT_MAX_STORED_BYTES",
      "DEFAULT_MAX_STORED_BYTES_PER_CLIENT",
      "DEFAULT_MAX_STORED_BYTES_PER_TOPIC",
      "DEFAULT_MAX_STORED_MESSAGES_PER_TOPIC",
      "DEFAULT_MAX_UNACKED_BYTES",
      "DEFAULT_MAX_UNACKED_MESSAGES",
      "MESSAGE_OVERHEAD_BYTES",
      "QuotaExceededError",
      "RelayCloseCode",
      "RelayErrorCode",
      "createRelay",
      "memoryStore",
      "redisStore",
      "sqliteStore",
    ]
  `)
})
