import { expect, test } from 'vitest'

// The public names of @latchkey/core/wallet-book: an API change shows in review as a change to this list.
test('default: exports', async () => {
  expect(Object.keys(await import('./index.js')).sort()).toMatchInlineSnapshot(`
    [
      "findWalletById",
      "findWalletByRdns",
      "getInAppBrowserLink",
      "getWalletBook",
      "getWalletConnectDeepLink",
    ]
  `)
})
