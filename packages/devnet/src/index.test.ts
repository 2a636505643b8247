import { expect, test } from 'vitest'

// The public names of @latchkey/devnet: an API change shows in review as a change to this list.
test('default: exports', async () => {
  expect(Object.keys(await import('./index.js')).sort()).toMatchInlineSnapshot(`
    [
      "DevnetError",
      "PortInUseError",
      "StartFailedError",
      "StartTimeoutError",
      "anvil",
      "buildDemo",
      "buildWallet",
      "defaultPorts",
      "defineInstance",
      "getFreePort",
      "resolveAnvilBinary",
      "startStack",
      "staticServer",
    ]
  `)
})
