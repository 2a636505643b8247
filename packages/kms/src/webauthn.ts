import { createHash } from 'node:crypto'
import { PASSKEY_PUBLIC_KEY_ALGORITHM } from '@latchkey/constants'
import { verifyAuthenticationResponse, verifyRegistrationResponse } from '@simplewebauthn/server'
import { GrpcCode, invalid, KmsError } from './errors.js'
import { own } from './own.js'
import type { AuthenticatorRow } from './storage/tables.js'

/** Where passkeys may be used: the relying party ids and the page origins that ask. */
export type WebauthnConfig = { readonly rpIds: readonly string[]; readonly origins: readonly string[] }

const TRANSPORTS: Record<string, string> = {
  internal: 'AUTHENTICATOR_TRANSPORT_INTERNAL',
  usb: 'AUTHENTICATOR_TRANSPORT_USB',
  nfc: 'AUTHENTICATOR_TRANSPORT_NFC',
  ble: 'AUTHENTICATOR_TRANSPORT_BLE',
  hybrid: 'AUTHENTICATOR_TRANSPORT_HYBRID',
}
const FROM_TRANSPORT = Object.fromEntries(Object.entries(TRANSPORTS).map(([short, long]) => [long, short]))

/** The registration of a passkey as the clients send it (create_sub_organization, create_authenticators). */
export type AuthenticatorParams = {
  authenticatorName: string
  challenge: string
  attestation: { credentialId: string; clientDataJson: string; attestationObject: string; transports: string[] }
}

/** What the kms stores of a verified passkey registration. */
export type VerifiedRegistration = { credentialId: string; publicKey: string; counter: number; aaguid: string; attestationType: string }

/**
 * Verifies a passkey registration (@simplewebauthn/server: challenge, origin, rp id, attestation)
 * and returns what to store. Only ES256 (-7) keys: what the clients ask for (SPEC §9).
 */
export async function verifyRegistration(params: AuthenticatorParams, config: WebauthnConfig): Promise<VerifiedRegistration> {
  const { attestation } = params
  let verified: Awaited<ReturnType<typeof verifyRegistrationResponse>>
  try {
    verified = await verifyRegistrationResponse({
      response: {
        id: attestation.credentialId,
        rawId: attestation.credentialId,
        type: 'public-key',
        response: {
          clientDataJSON: attestation.clientDataJson,
          attestationObject: attestation.attestationObject,
          transports: attestation.transports.map((transport) => own(FROM_TRANSPORT, transport)).filter(Boolean) as never,
        },
        clientExtensionResults: {},
      },
      expectedChallenge: params.challenge,
      expectedOrigin: [...config.origins],
      expectedRPID: [...config.rpIds],
      requireUserVerification: false,
      supportedAlgorithmIDs: [PASSKEY_PUBLIC_KEY_ALGORITHM],
    })
  } catch (error) {
    throw invalid(`the passkey attestation does not verify: ${(error as Error).message}`)
  }
  if (!verified.verified || !verified.registrationInfo) throw invalid('the passkey attestation does not verify')
  const { credential, aaguid, fmt } = verified.registrationInfo
  if (credential.id !== attestation.credentialId) throw invalid('the attestation is for another credential id')
  return {
    credentialId: credential.id,
    publicKey: Buffer.from(credential.publicKey).toString('base64url'),
    counter: credential.counter,
    aaguid,
    attestationType: fmt,
  }
}

/** The `X-Stamp-Webauthn` header: plain JSON, each value base64url. */
type WebauthnStamp = { authenticatorData: string; clientDataJson: string; credentialId: string; signature: string }

export function parseWebauthnStamp(header: string): WebauthnStamp {
  let stamp: Partial<WebauthnStamp>
  try {
    stamp = JSON.parse(header)
  } catch {
    throw new KmsError(GrpcCode.unauthenticated, 'malformed stamp: X-Stamp-Webauthn is not JSON')
  }
  // `null`, a number or an array parse as JSON too; only an object holds the four fields.
  if (typeof stamp !== 'object' || stamp === null || Array.isArray(stamp))
    throw new KmsError(GrpcCode.unauthenticated, 'malformed stamp: X-Stamp-Webauthn must be a JSON object')
  for (const key of ['authenticatorData', 'clientDataJson', 'credentialId', 'signature'] as const)
    if (typeof stamp[key] !== 'string' || !stamp[key]) throw new KmsError(GrpcCode.unauthenticated, `malformed stamp: ${key} is missing`)
  return stamp as WebauthnStamp
}

/**
 * Verifies a passkey stamp over the exact body: the assertion's challenge is the hex SHA-256 of
 * the body (as UTF-8 bytes), signed by the registered key; the signature counter must move on.
 * Returns the new counter.
 */
export async function verifyWebauthnStamp(stamp: WebauthnStamp, body: Uint8Array, authenticator: AuthenticatorRow, config: WebauthnConfig): Promise<number> {
  const challenge = Buffer.from(createHash('sha256').update(body).digest('hex'), 'utf8').toString('base64url')
  let verified: Awaited<ReturnType<typeof verifyAuthenticationResponse>>
  try {
    verified = await verifyAuthenticationResponse({
      response: {
        id: stamp.credentialId,
        rawId: stamp.credentialId,
        type: 'public-key',
        response: { authenticatorData: stamp.authenticatorData, clientDataJSON: stamp.clientDataJson, signature: stamp.signature },
        clientExtensionResults: {},
      },
      expectedChallenge: challenge,
      expectedOrigin: [...config.origins],
      expectedRPID: [...config.rpIds],
      credential: { id: authenticator.credential_id, publicKey: Buffer.from(authenticator.public_key, 'base64url'), counter: authenticator.counter },
      requireUserVerification: false,
    })
  } catch (error) {
    throw new KmsError(GrpcCode.unauthenticated, `invalid passkey stamp: ${(error as Error).message}`)
  }
  if (!verified.verified) throw new KmsError(GrpcCode.unauthenticated, 'invalid passkey stamp')
  return verified.authenticationInfo.newCounter
}

export const toTransport = (short: string) => own(TRANSPORTS, short) ?? short
