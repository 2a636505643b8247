import { generateKeyPairSync } from 'node:crypto'

/** A P-256 API key pair as the clients take it: 32-byte private key and compressed public key, hex. */
export function apiKeyPair() {
  const { privateKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' })
  const jwk = privateKey.export({ format: 'jwk' })
  const y = Buffer.from(jwk.y!, 'base64url')
  return {
    apiPrivateKey: Buffer.from(jwk.d!, 'base64url').toString('hex'),
    apiPublicKey: `${y[31]! % 2 === 0 ? '02' : '03'}${Buffer.from(jwk.x!, 'base64url').toString('hex')}`,
  }
}
