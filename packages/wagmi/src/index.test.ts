import { expect, test } from 'vitest'

test('default: exports', async () => {
  expect(Object.keys(await import('./index.js')).sort()).toMatchInlineSnapshot(`
    [
      "LatchkeyWagmiProvider",
      "SUPPORTED_WAGMI_MAJORS",
      "UnsupportedWagmiVersionError",
      "embedded",
      "walletConnect",
    ]
  `)
})
