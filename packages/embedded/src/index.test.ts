import { expect, test } from 'vitest'

// The public names of @latchkey/embedded: an API change shows in review as a change to this list.
test('default: exports', async () => {
  expect(Object.keys(await import('./index.js')).sort()).toMatchInlineSnapshot(`
    [
      "AccountNotFoundError",
      "ActivityStatusError",
      "BackendError",
      "CannotProceedError",
      "ClientsNotFoundError",
      "ConsensusNeededError",
      "DEFAULT_SESSION_SECONDS",
      "EmbeddedError",
      "InvalidCodeError",
      "KmsRequestError",
      "MissingAppNameError",
      "MissingBaseUrlError",
      "MissingSignWithError",
      "PASSKEY_ALGORITHM",
      "PasskeyIdentifierRequiredError",
      "ProviderRpcError",
      "RECOVERY_CODE_SECONDS",
      "RECOVERY_SESSION_SECONDS",
      "SessionError",
      "SessionKeyRegistrationError",
      "SignRawPayloadResultNotFoundError",
      "SubOrganizationNotFoundError",
      "WALLET_NAMES",
      "WEBAUTHN_CHALLENGE_BYTES",
      "WEBAUTHN_TIMEOUT_MS",
      "WEBAUTHN_USER_VERIFICATION",
      "WebauthnCeremonyError",
      "WebauthnNotSupportedError",
      "completed",
      "createEmbeddedProvider",
      "createEmbeddedWallet",
      "createPasskey",
      "exportWallet",
      "importWallet",
      "indexedDbSessionKeys",
      "isSessionKeyExpired",
      "kmsCall",
      "passkeyFlows",
      "startRecovery",
    ]
  `)
})
