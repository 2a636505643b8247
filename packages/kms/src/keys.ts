import { createECDH } from 'node:crypto'

/**
 * A new P-256 API key pair in the form the clients take it (`ApiKeyStamper`): the 32-byte private
 * key and the compressed public key, both hex.
 *
 * By ECDH's key generation, not `generateKeyPairSync`: Node 20 deadlocks exporting a JWK of a key
 * `generateKeyPairSync` made when a garbage collection during the export frees the generation's
 * job, which takes the key's lock the export holds (a loop of them hangs within a few hundred).
 *
 * @example
 * const { apiPublicKey, apiPrivateKey } = generateApiKeyPair()
 */
export function generateApiKeyPair(): { apiPublicKey: string; apiPrivateKey: string } {
  const ecdh = createECDH('prime256v1')
  ecdh.generateKeys()
  return {
    // A scalar with leading zero bytes comes back shorter: the key is always 32 bytes.
    apiPrivateKey: ecdh.getPrivateKey('hex').padStart(64, '0'),
    apiPublicKey: ecdh.getPublicKey('hex', 'compressed'),
  }
}
