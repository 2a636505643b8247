import { createHash, generateKeyPairSync, randomBytes, sign } from 'node:crypto'

// A software passkey for Node tests: Node has no authenticator, so an ES256 key answers
// navigator.credentials as a platform authenticator would (browsers' are covered by Chromium's
// virtual authenticator in e2e).

export const rpId = 'localhost'
export const origin = 'http://localhost:5173'

/** Minimal CBOR: unsigned and negative integers, byte and text strings, maps. */
function cbor(value: unknown): Buffer {
  const head = (major: number, length: number) =>
    length < 24
      ? Buffer.from([(major << 5) | length])
      : length < 256
        ? Buffer.from([(major << 5) | 24, length])
        : Buffer.from([(major << 5) | 25, length >> 8, length & 255])
  if (typeof value === 'number') return value >= 0 ? head(0, value) : head(1, -1 - value)
  if (typeof value === 'string') return Buffer.concat([head(3, Buffer.byteLength(value)), Buffer.from(value)])
  if (value instanceof Uint8Array) return Buffer.concat([head(2, value.length), value])
  const entries = value instanceof Map ? [...value.entries()] : Object.entries(value as object)
  return Buffer.concat([head(5, entries.length), ...entries.flatMap(([key, item]) => [cbor(key), cbor(item)])])
}

const sha256 = (data: Uint8Array | string) => createHash('sha256').update(data).digest()
const toArrayBuffer = (bytes: Buffer) => bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.length)

/** A passkey: `register` makes its attestation, `credentials` answers navigator.credentials.get. */
export function softwareAuthenticator(options: { origin?: string } = {}) {
  const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' })
  // The point from the SPKI encoding (its last 65 bytes), not a JWK export: Node 20 can deadlock
  // exporting generateKeyPairSync's key as a JWK (packages/kms/src/keys.ts).
  const point = publicKey.export({ format: 'der', type: 'spki' }).subarray(-65)
  const credentialId = randomBytes(16)
  const state = { counter: 0 }
  const clientOrigin = options.origin ?? origin
  return {
    state,
    credentialId: credentialId.toString('base64url'),
    /** A "none" attestation for `challenge` (base64url), as the clients send it. */
    register(challenge: string) {
      const clientData = Buffer.from(JSON.stringify({ type: 'webauthn.create', challenge, origin: clientOrigin, crossOrigin: false }))
      const coseKey = cbor(
        new Map<number, unknown>([
          [1, 2],
          [3, -7],
          [-1, 1],
          [-2, point.subarray(1, 33)],
          [-3, point.subarray(33)],
        ]),
      )
      const length = Buffer.from([credentialId.length >> 8, credentialId.length & 255])
      const authData = Buffer.concat([sha256(rpId), Buffer.from([0x45]), Buffer.alloc(4), Buffer.alloc(16), length, credentialId, coseKey])
      return {
        credentialId: credentialId.toString('base64url'),
        clientDataJson: clientData.toString('base64url'),
        attestationObject: cbor({ fmt: 'none', attStmt: {}, authData }).toString('base64url'),
        transports: ['AUTHENTICATOR_TRANSPORT_INTERNAL' as const],
      }
    },
    /** navigator.credentials, for the stamper. */
    credentials: {
      async get({ publicKey: request }: { publicKey: { challenge: ArrayBuffer; rpId: string } }) {
        state.counter++
        const clientData = Buffer.from(
          JSON.stringify({ type: 'webauthn.get', challenge: Buffer.from(request.challenge).toString('base64url'), origin: clientOrigin, crossOrigin: false }),
        )
        const counter = Buffer.alloc(4)
        counter.writeUInt32BE(state.counter)
        const authenticatorData = Buffer.concat([sha256(request.rpId), Buffer.from([0x05]), counter])
        const signature = sign('sha256', Buffer.concat([authenticatorData, sha256(clientData)]), privateKey)
        return {
          id: credentialId.toString('base64url'),
          rawId: toArrayBuffer(credentialId),
          type: 'public-key',
          authenticatorAttachment: 'platform',
          response: {
            clientDataJSON: toArrayBuffer(clientData),
            authenticatorData: toArrayBuffer(authenticatorData),
            signature: toArrayBuffer(signature),
            userHandle: null,
          },
          getClientExtensionResults: () => ({}),
        }
      },
    },
  }
}

/** Makes `authenticator` the one navigator.credentials answers with. */
export function useAuthenticator(authenticator: ReturnType<typeof softwareAuthenticator>) {
  Object.defineProperty(globalThis, 'navigator', { value: { credentials: authenticator.credentials }, configurable: true, writable: true })
}
