import { expect, test } from 'vitest'

test('default: exports', async () => {
  expect(Object.keys(await import('./index.js')).sort()).toMatchInlineSnapshot(`
    [
      "InvalidEnvelopeError",
      "InvalidKeyError",
      "InvalidPairingUriError",
      "PairingExpiredError",
      "RELAY_JWT_LEEWAY_S",
      "RELAY_JWT_TTL_S",
      "RelayAuthError",
      "WalletConnectError",
      "clientIdOf",
      "decodeEnvelope",
      "decrypt",
      "deriveSymKey",
      "encrypt",
      "formatPairingUri",
      "generateKeyPair",
      "generateSymKey",
      "parsePairingUri",
      "publicKeyOf",
      "signRelayJwt",
      "topicOf",
      "verifyRelayJwt",
    ]
  `)
})
