import { expect, test } from 'vitest'

// The public names of @latchkey/relay: an API change shows in review as a change to this list.
test('default: exports', async () => {
  expect(Object.keys(await import('./index.js')).sort()).toMatchInlineSnapshot(`
    [
      "RelayCloseCode",
      "RelayErrorCode",
      "createRelay",
      "memoryStore",
      "redisStore",
      "sqliteStore",
    ]
  `)
})
