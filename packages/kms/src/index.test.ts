import { expect, test } from 'vitest'

// The public names of @latchkey/kms: an API change shows in review as a change to this list.
test('default: exports', async () => {
  expect(Object.keys(await import('./index.js')).sort()).toMatchInlineSnapshot(`
    [
      "ACTIVITIES",
      "API_KEY_P256_SCHEME",
      "DATABASE_URL_VARIABLE",
      "DEFAULT_RATE_LIMITS",
      "DEFAULT_WEBAUTHN",
      "FRAME_PAGES",
      "GrpcCode",
      "KmsError",
      "MAX_ACCOUNTS_PER_REQUEST",
      "MAX_ACCOUNTS_PER_WALLET",
      "MAX_LIST_ITEMS",
      "OTP_DEFAULT_SECONDS",
      "OTP_MAX_ATTEMPTS",
      "RECOVERY_CODE_SECONDS",
      "SIGNER_PATH",
      "SMTP_URL_VARIABLE",
      "STAGES",
      "TIMESTAMP_WINDOW_MS",
      "UNKNOWN_KEY_MESSAGE",
      "createFramesApp",
      "createKms",
      "createKmsApp",
      "createStageProfile",
      "credentialBundle",
      "devInbox",
      "expiredKeyMessage",
      "exportBundle",
      "framesContentSecurityPolicy",
      "generateApiKeyPair",
      "hpkeOpen",
      "hpkeSeal",
      "openCredentialBundle",
      "openExportBundle",
      "signBundle",
      "smtpMailer",
      "verifyApiKeyStamp",
    ]
  `)
})
