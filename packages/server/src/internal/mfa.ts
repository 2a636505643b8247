import type { TurnkeyClient } from '@turnkey/http'
import { callKms } from './context.js'

/** A second factor as the kms lists it (`list_mfa_factors`, a Latchkey query): never a secret. */
export type KmsMfaFactor = {
  factorId: string
  type: 'totp' | 'passkey'
  name: string
  createdAt: { seconds: string; nanos: string }
  /** Enrolled: a passkey marked, or a TOTP secret whose first code was verified. */
  verified: boolean
  /** Present while five wrong codes keep it locked. */
  lockedUntil?: { seconds: string; nanos: string }
}

/** A second factor as the backend answers it: enrolled ones only, times as ISO strings. */
export type MfaFactor = { factorId: string; type: 'totp' | 'passkey'; name: string; enrolledAt: string; lockedUntil?: string }

const iso = (at: { seconds: string; nanos: string }) => new Date(Number(at.seconds) * 1000 + Math.floor(Number(at.nanos) / 1_000_000)).toISOString()

/**
 * The user's enrolled second factors, read from the kms with the parent organization's key (the
 * kms holds them; the backend keeps no copy): oldest first; a pending TOTP enrolment is left out.
 *
 * @example
 * const factors = await mfaFactorsOf(kms, organizationId, userId) // [{ type: 'totp', … }]
 */
export async function mfaFactorsOf(kms: TurnkeyClient, organizationId: string, userId: string): Promise<MfaFactor[]> {
  const { factors } = await callKms(() => kms.request<unknown, { factors: KmsMfaFactor[] }>('/public/v1/query/list_mfa_factors', { organizationId, userId }))
  return factors
    .filter((factor) => factor.verified)
    .map((factor) => ({
      factorId: factor.factorId,
      type: factor.type,
      name: factor.name,
      enrolledAt: iso(factor.createdAt),
      ...(factor.lockedUntil ? { lockedUntil: iso(factor.lockedUntil) } : {}),
    }))
}
