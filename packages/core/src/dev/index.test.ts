import { expect, test } from 'vitest'

// The public names of @latchkey/core/dev: an API change shows in review as a change to this list.
test('default: exports', async () => {
  expect(Object.keys(await import('./index.js')).sort()).toMatchInlineSnapshot(`
    [
      "WalletCallsError",
      "announceProvider",
      "createDevWallet",
      "createWalletCalls",
      "devWalletInfo",
    ]
  `)
})
