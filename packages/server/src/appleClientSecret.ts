import { importPKCS8, SignJWT } from 'jose'

/** Apple's issuer, and the audience of the client secrets it accepts. */
export const APPLE_ISSUER = 'https://appleid.apple.com'

/** The longest a client secret may live, by Apple's rule (six months), and the shortest we make. */
export const APPLE_CLIENT_SECRET_SECONDS = { min: 60, max: 15_777_000, default: 86_400 } as const

export type AppleClientSecretParameters = {
  /** The Services ID the sign-in is for (the `client_id`, and the secret's `sub`). */
  clientId: string
  /** The Apple Developer team id (the secret's `iss`). */
  teamId: string
  /** The id of the Sign in with Apple key (the secret's `kid`). */
  keyId: string
  /** That key, as Apple hands it out: the `.p8` file's PKCS#8 PEM of a P-256 key. */
  privateKey: string
  /** How long each secret lives, 60 s to six months. Default one day. */
  lifetimeSeconds?: number | undefined
  /** Clock in unix ms. Default `Date.now`. */
  now?: (() => number) | undefined
}

/**
 * Apple's token endpoint takes no fixed client secret: it takes a JWT the app signs with its Sign
 * in with Apple key (ES256; `kid` the key id, `iss` the team id, `sub` the Services ID, `aud`
 * https://appleid.apple.com, at most six months long). This answers a function giving the current
 * one: signed on first use, kept, and signed anew once half its lifetime has passed, so a secret
 * handed out always has at least half its lifetime left. A key that is not a P-256 PKCS#8 PEM is
 * refused here, before any sign-in.
 *
 * @example
 * const clientSecret = await appleClientSecret({ clientId: 'com.example.web', teamId: 'ABCDE12345', keyId: 'KEY1234567', privateKey: pem })
 * createServerApp({ ..., oauth: { apple: { issuer: APPLE_ISSUER, clientId: 'com.example.web', clientSecret } } })
 */
export async function appleClientSecret(parameters: AppleClientSecretParameters): Promise<() => Promise<string>> {
  const lifetime = parameters.lifetimeSeconds ?? APPLE_CLIENT_SECRET_SECONDS.default
  if (!Number.isInteger(lifetime) || lifetime < APPLE_CLIENT_SECRET_SECONDS.min || lifetime > APPLE_CLIENT_SECRET_SECONDS.max)
    throw new RangeError(`lifetimeSeconds must be a whole number from ${APPLE_CLIENT_SECRET_SECONDS.min} to ${APPLE_CLIENT_SECRET_SECONDS.max} (six months)`)
  for (const key of ['clientId', 'teamId', 'keyId'] as const) if (!parameters[key]?.trim()) throw new TypeError(`${key} is required for Apple's client secret`)
  const now = parameters.now ?? Date.now
  let key: CryptoKey
  try {
    key = await importPKCS8(parameters.privateKey.trim(), 'ES256')
  } catch (error) {
    throw new TypeError(`privateKey must be the Sign in with Apple key: a P-256 private key in PKCS#8 PEM (the .p8 file): ${(error as Error).message}`)
  }
  let current: { jwt: Promise<string>; renewAt: number } | undefined
  return () => {
    const at = Math.floor(now() / 1000)
    if (!current || at >= current.renewAt) {
      const jwt = new SignJWT({})
        .setProtectedHeader({ alg: 'ES256', kid: parameters.keyId })
        .setIssuer(parameters.teamId)
        .setSubject(parameters.clientId)
        .setAudience(APPLE_ISSUER)
        .setIssuedAt(at)
        .setExpirationTime(at + lifetime)
        .sign(key)
      current = { jwt, renewAt: at + Math.floor(lifetime / 2) }
    }
    return current.jwt
  }
}
