import { expect, test } from 'vitest'

// The public names of @latchkey/devnet: an API change shows in review as a change to this list.
test('default: exports', async () => {
  expect(Object.keys(await import('./index.js')).sort()).toMatchInlineSnapshot(`
    [
      "BATCH_EXECUTOR_ADDRESS",
      "DEMO_OAUTH_CLIENT_ID",
      "DevnetError",
      "ENTRY_POINT_ADDRESS",
      "GUARANTOR_TOKENS",
      "OIDC_PROVIDERS",
      "PAYMASTER_DEPOSIT",
      "PortInUseError",
      "StartFailedError",
      "StartTimeoutError",
      "TEST_TOKEN_ADDRESS",
      "alto",
      "anvil",
      "buildDemo",
      "buildWallet",
      "defaultPorts",
      "defineInstance",
      "deployBatchExecutor",
      "deployEntryPoint",
      "deployPaymasters",
      "deployTestToken",
      "getFreePort",
      "loadPaymasters",
      "oidcInstance",
      "resolveAnvilBinary",
      "startStack",
      "staticServer",
      "testSubject",
    ]
  `)
})
