import { createServer, type Server } from 'node:http'
import { getFreePort } from '@latchkey/devnet'
import { exportJWK, generateKeyPair, type JWTPayload, SignJWT } from 'jose'

// An OpenID issuer reduced to what a verifier reads: a discovery document and a JWKS over HTTP,
// and tokens signed with jose by its key. For the cases the real provider (oidc-provider, in
// devnet) will not issue: expired, for another audience, with any nonce, or signed by another key.

/** Starts the issuer on a free port; `stop` in afterAll. */
export async function startTestIssuer() {
  const { privateKey, publicKey } = await generateKeyPair('RS256')
  const kid = 'test-issuer-key'
  const keys = [{ ...(await exportJWK(publicKey)), kid, alg: 'RS256', use: 'sig' }]
  const port = await getFreePort()
  const issuer = `http://127.0.0.1:${port}/issuer`
  let discoveries = 0
  let keyFetches = 0
  const server: Server = createServer((request, response) => {
    const json = (body: unknown) => response.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(body))
    if (request.url === '/issuer/.well-known/openid-configuration') {
      discoveries++
      json({ issuer, jwks_uri: `${issuer}/jwks`, id_token_signing_alg_values_supported: ['RS256'] })
    } else if (request.url === '/issuer/jwks') {
      keyFetches++
      json({ keys })
    } else response.writeHead(404).end()
  })
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject)
    server.listen(port, '127.0.0.1', resolve)
  })
  return {
    issuer,
    /** How often the discovery document was fetched. */
    discoveries: () => discoveries,
    /** How often the JWKS was fetched. */
    keyFetches: () => keyFetches,
    /**
     * An ID token with `claims` over defaults (this issuer, `audience`, an hour from `now`), signed
     * by the issuer's key, or by `signer` under the issuer's key id (a forgery).
     */
    async sign(claims: JWTPayload, defaults: { audience: string; now: number }, signer?: CryptoKey) {
      const at = Math.floor(defaults.now / 1000)
      return await new SignJWT({ iss: issuer, aud: defaults.audience, iat: at, exp: at + 3600, ...claims })
        .setProtectedHeader({ alg: 'RS256', kid, typ: 'JWT' })
        .sign(signer ?? privateKey)
    },
    /** A key that is not the issuer's, to forge with. */
    otherKey: async () => (await generateKeyPair('RS256')).privateKey,
    stop: () => new Promise<void>((resolve) => server.close(() => resolve())),
  }
}
