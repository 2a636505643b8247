import { ed25519 } from '@noble/curves/ed25519.js'
import { bytesToHex, concatBytes, hexToBytes, randomBytes, utf8ToBytes } from '@noble/hashes/utils.js'
import { fromBase58, fromBase64Url, toBase58, toBase64Url } from './encoding.js'
import { WalletConnectError } from './errors.js'

/*
 * The relay auth token: an EdDSA JWT whose issuer is the client's ed25519 key as a did:key. The
 * issuer is also the client id. Clients sign one per (re)connect; the relay verifies it.
 */

const DID_KEY_PREFIX = 'did:key:z'
/** Multicodec header of an ed25519 public key. */
const ED25519_MULTICODEC = Uint8Array.of(0xed, 0x01)
const HEADER = { alg: 'EdDSA', typ: 'JWT' } as const
/** Seconds a token lives, as the official clients sign it. */
export const RELAY_JWT_TTL_S = 86_400
/** Clock skew the relay tolerates on iat and exp, as the official relay does. */
export const RELAY_JWT_LEEWAY_S = 120
/**
 * The longest lifetime (`exp - iat`) a relay accepts: the official clients sign for exactly one
 * day, so a longer token is made by hand, and one that never expires would keep a client id alive
 * for good.
 */
export const RELAY_JWT_MAX_LIFETIME_S = 86_400

export type RelayJwtClaims = { iss: string; sub: string; aud: string; iat: number; exp: number }

/** Why a relay token was refused; `reason` is the close reason a relay sends. */
export class RelayAuthError extends WalletConnectError {
  override name = 'RelayAuthError'
  constructor(readonly reason: string) {
    super('relay_auth', 'The relay refused the connection token.', { details: reason })
  }
}

/**
 * The did:key of an ed25519 public key: the client id.
 *
 * @example
 * const clientId = clientIdOf(ed25519.getPublicKey(seed))
 */
export function clientIdOf(publicKey: Uint8Array): string {
  return `${DID_KEY_PREFIX}${toBase58(concatBytes(ED25519_MULTICODEC, publicKey))}`
}

/**
 * The ed25519 public key inside a did:key issuer.
 *
 * @example
 * const key = publicKeyOf('did:key:z6Mk…')
 */
export function publicKeyOf(did: string): Uint8Array {
  if (typeof did !== 'string' || !did.startsWith(DID_KEY_PREFIX)) throw new RelayAuthError('iss is not an ed25519 did:key')
  let bytes: Uint8Array
  try {
    bytes = fromBase58(did.slice(DID_KEY_PREFIX.length))
  } catch {
    throw new RelayAuthError('iss is not base58btc')
  }
  if (bytes.length !== 34 || bytes[0] !== 0xed || bytes[1] !== 0x01) throw new RelayAuthError('iss is not an ed25519 did:key')
  return bytes.subarray(2)
}

export type SignRelayJwtParameters = {
  /** 32-byte ed25519 seed, hex: keep it to keep the client id. */
  seed: string
  /** The relay URL exactly as configured. */
  aud: string
  /** Default: 32 random bytes, hex. */
  sub?: string | undefined
  /** Unix seconds; default now. */
  iat?: number | undefined
  ttl?: number | undefined
}

/**
 * Signs a relay auth token.
 *
 * @example
 * const auth = signRelayJwt({ seed, aud: 'ws://localhost:5555' })
 */
export function signRelayJwt({ seed, aud, sub, iat, ttl = RELAY_JWT_TTL_S }: SignRelayJwtParameters): string {
  const secret = hexToBytes(seed)
  const issuedAt = iat ?? Math.floor(Date.now() / 1000)
  const claims: RelayJwtClaims = {
    iss: clientIdOf(ed25519.getPublicKey(secret)),
    sub: sub ?? bytesToHex(randomBytes(32)),
    aud,
    iat: issuedAt,
    exp: issuedAt + ttl,
  }
  const signingInput = `${encodeJson(HEADER)}.${encodeJson(claims)}`
  return `${signingInput}.${toBase64Url(ed25519.sign(utf8ToBytes(signingInput), secret))}`
}

/**
 * Verifies a relay auth token: header, did:key issuer, ed25519 signature, and iat/exp within
 * the leeway, and a lifetime (`exp - iat`) of at most `maxLifetime` (default one day).
 * `audiences`, when given, must contain `aud`.
 *
 * @example
 * const { iss } = verifyRelayJwt(token, { now: Math.floor(Date.now() / 1000) })
 */
export function verifyRelayJwt(
  token: string,
  options: {
    now: number
    leeway?: number | undefined
    /** Longest `exp - iat` accepted, in seconds. Default RELAY_JWT_MAX_LIFETIME_S (one day). */
    maxLifetime?: number | undefined
    audiences?: readonly string[] | undefined
    /**
     * Checks an ed25519 signature; default @noble/curves, which runs anywhere. A server passes
     * its platform's (the relay: node:crypto, about ten times faster per connection).
     */
    verifySignature?: ((signature: Uint8Array, message: Uint8Array, publicKey: Uint8Array) => boolean) | undefined
  },
): RelayJwtClaims {
  const parts = typeof token === 'string' ? token.split('.') : []
  if (parts.length !== 3) throw new RelayAuthError('the token is not a JWT')
  const [header, payload, signature] = parts as [string, string, string]
  const parsedHeader = decodeJson(header) as Partial<typeof HEADER> | undefined
  if (parsedHeader?.alg !== 'EdDSA' || parsedHeader.typ !== 'JWT') throw new RelayAuthError('the token header is not EdDSA/JWT')
  const claims = decodeJson(payload) as Partial<RelayJwtClaims> | undefined
  if (!claims || typeof claims.iss !== 'string' || typeof claims.aud !== 'string' || typeof claims.sub !== 'string')
    throw new RelayAuthError('the token lacks iss, sub or aud')
  if (typeof claims.iat !== 'number' || typeof claims.exp !== 'number') throw new RelayAuthError('the token lacks iat or exp')
  const publicKey = publicKeyOf(claims.iss)
  let signatureBytes: Uint8Array
  try {
    signatureBytes = fromBase64Url(signature)
  } catch {
    throw new RelayAuthError('the signature is not base64url')
  }
  let valid = false
  try {
    valid = (options.verifySignature ?? ed25519.verify)(signatureBytes, utf8ToBytes(`${header}.${payload}`), publicKey)
  } catch {
    valid = false
  }
  if (!valid) throw new RelayAuthError('the signature does not verify')
  const leeway = options.leeway ?? RELAY_JWT_LEEWAY_S
  if (claims.exp + leeway < options.now) throw new RelayAuthError('the token has expired')
  if (claims.iat - leeway > options.now) throw new RelayAuthError('the token is issued in the future')
  const maxLifetime = options.maxLifetime ?? RELAY_JWT_MAX_LIFETIME_S
  if (claims.exp - claims.iat > maxLifetime) throw new RelayAuthError(`the token lives longer than ${maxLifetime} s`)
  if (options.audiences && !options.audiences.includes(claims.aud)) throw new RelayAuthError(`the token is for another relay (${claims.aud})`)
  return claims as RelayJwtClaims
}

function encodeJson(value: unknown): string {
  return toBase64Url(utf8ToBytes(JSON.stringify(value)))
}

function decodeJson(part: string): unknown {
  try {
    return JSON.parse(new TextDecoder().decode(fromBase64Url(part)))
  } catch {
    return undefined
  }
}
