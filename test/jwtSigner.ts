import { createHash, generateKeyPairSync, sign } from 'node:crypto'

/**
 * A session JWT signed as the kms and Turnkey's notarizer sign them (ES256 over a double SHA-256,
 * raw r‖s), with a key of our own: `publicKey` is its uncompressed hex. Used by the backend's
 * tests and `bench:backend`.
 *
 * @example
 * const signer = jwtSigner()
 * createServerApp({ …, sessionSignerPublicKey: signer.publicKey })
 * const token = signer.sign({ exp: Math.floor(Date.now() / 1000) + 60 })
 */
export function jwtSigner() {
  const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' })
  // The point from the SPKI encoding (its last 65 bytes), not a JWK export: Node 20 can deadlock
  // exporting generateKeyPairSync's key as a JWK (packages/kms/src/keys.ts).
  const point = publicKey.export({ format: 'der', type: 'spki' }).subarray(-65)
  return {
    publicKey: point.toString('hex'),
    sign(claims: object) {
      const input = `${Buffer.from(JSON.stringify({ alg: 'ES256', typ: 'JWT' })).toString('base64url')}.${Buffer.from(JSON.stringify(claims)).toString('base64url')}`
      // sign() hashes once more: the signature is over sha256(sha256(input)).
      const signature = sign('sha256', createHash('sha256').update(input).digest(), { key: privateKey, dsaEncoding: 'ieee-p1363' })
      return `${input}.${signature.toString('base64url')}`
    },
  }
}
