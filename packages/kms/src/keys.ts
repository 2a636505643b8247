import { generateKeyPairSync } from 'node:crypto'

/**
 * A new P-256 API key pair in the form the clients take it (`ApiKeyStamper`): the 32-byte private
 * key and the compressed public key, both hex.
 *
 * @example
 * const { apiPublicKey, apiPrivateKey } = generateApiKeyPair()
 */
export function generateApiKeyPair(): { apiPublicKey: string; apiPrivateKey: string } {
  const jwk = generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey.export({ format: 'jwk' })
  const y = Buffer.from(jwk.y!, 'base64url')
  return {
    apiPrivateKey: Buffer.from(jwk.d!, 'base64url').toString('hex'),
    apiPublicKey: `${y[31]! % 2 === 0 ? '02' : '03'}${Buffer.from(jwk.x!, 'base64url').toString('hex')}`,
  }
}
