import { expect, test } from 'vitest'

// The public names of @latchkey/server: an API change shows in review as a change to this list.
test('default: exports', async () => {
  expect(Object.keys(await import('./index.js')).sort()).toMatchInlineSnapshot(`
    [
      "ACCESS_TOKEN_SECONDS",
      "APPLE_CLIENT_SECRET_SECONDS",
      "APPLE_ISSUER",
      "LIMITS",
      "OAUTH_CALLBACK_PATH",
      "OAUTH_PROVIDERS",
      "PAYMASTER_ERROR_CODES",
      "PAYMASTER_PATH",
      "RECOVERY_CODE_SECONDS",
      "SERVER_MIGRATIONS",
      "SESSION_COOKIE",
      "SESSION_KEY_SECONDS",
      "SIWE_COOKIE",
      "SIWE_TIMES",
      "ServerError",
      "StoreConflictError",
      "WALLET_NAME",
      "appleClientSecret",
      "createAppServer",
      "createServerApp",
      "createServerAudit",
      "oauthNonce",
      "openStore",
      "parsePaymasterPolicy",
      "revokeSessions",
      "verifyServerAudit",
    ]
  `)
})
