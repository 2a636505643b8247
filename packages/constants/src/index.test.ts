import { expect, test } from 'vitest'

test('default: exports', async () => {
  expect(Object.keys(await import('./index.js')).sort()).toMatchInlineSnapshot(`
    [
      "CHAIN_ID_FORMAT",
      "DEFAULT_CHAIN_ID",
      "DEFAULT_EVENTS",
      "DEFAULT_METHODS",
      "EXCLUDED_EIP6963_CONNECTOR_KEYS",
      "LAST_USED_CHAIN_ID_KEY",
      "MAX_PAIRING_ATTEMPTS",
      "OPTIONAL_EVENTS",
      "PASSKEY_PUBLIC_KEY_ALGORITHM",
      "PROVIDER_REINIT_WAIT_MS",
      "RECOVERY_CODE_VALIDITY_S",
      "RECOVERY_SESSION_EXPIRY_S",
      "WALLET_KEY_SUFFIX",
      "WALLET_NAMES",
      "WEBAUTHN_CHALLENGE_BYTES",
      "WEBAUTHN_TIMEOUT_MS",
      "WEBAUTHN_USER_VERIFICATION",
    ]
  `)
})
