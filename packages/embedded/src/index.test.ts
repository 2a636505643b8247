import { expect, test } from 'vitest'

// The public names of @latchkey/embedded: an API change shows in review as a change to this list.
test('default: exports', async () => {
  expect(Object.keys(await import('./index.js')).sort()).toMatchInlineSnapshot(`
    [
      "AccountAlreadyLinkedError",
      "AccountNotFoundError",
      "ActivityStatusError",
      "BATCH_EXECUTOR_ADDRESS",
      "BATCH_MODE",
      "BackendError",
      "CannotProceedError",
      "ClientsNotFoundError",
      "ConsensusNeededError",
      "DEFAULT_SESSION_SECONDS",
      "EmbeddedError",
      "GrantRefusedError",
      "GrantRequestError",
      "GrantWithoutExpiryError",
      "InvalidAuthorizationError",
      "InvalidCodeError",
      "KmsRequestError",
      "LastLoginError",
      "MalformedGrantError",
      "MfaRequiredError",
      "MissingAppNameError",
      "MissingBaseUrlError",
      "MissingSignWithError",
      "OAUTH_WINDOW",
      "OAUTH_WINDOW_FEATURES",
      "OAuthError",
      "PASSKEY_ALGORITHM",
      "PasskeyIdentifierRequiredError",
      "ProviderRpcError",
      "RECOVERY_CODE_SECONDS",
      "RECOVERY_SESSION_SECONDS",
      "SessionError",
      "SessionKeyRegistrationError",
      "SignRawPayloadResultNotFoundError",
      "SponsorshipUnavailableError",
      "SubOrganizationNotFoundError",
      "UnknownPermissionError",
      "WALLET_NAMES",
      "WEBAUTHN_CHALLENGE_BYTES",
      "WEBAUTHN_TIMEOUT_MS",
      "WEBAUTHN_USER_VERIFICATION",
      "WebauthnCeremonyError",
      "WebauthnNotSupportedError",
      "completeOAuthRedirect",
      "completed",
      "createEmbeddedProvider",
      "createEmbeddedWallet",
      "createPasskey",
      "defaultRedirectUri",
      "exportWallet",
      "importWallet",
      "isSessionKeyExpired",
      "kmsCall",
      "linkingFlows",
      "oauthNonce",
      "passkeyFlows",
      "signInWithOAuth",
      "startRecovery",
    ]
  `)
})

// The consent frame's mount is a subpath of its own, so that an app's first load of the wallet leaves the frame's module out.
test('default: @latchkey/embedded/consent-frame exports the mount alone', async () => {
  expect(Object.keys(await import('./consentFrame.js')).sort()).toEqual(['mountConsentFrame'])
})
