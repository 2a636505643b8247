import type { TurnkeyClient } from '@turnkey/http'
import { type MfaFactor, mfaFactorsOf } from '../internal/mfa.js'
import type { LoginKind, Store } from '../store.js'

/** One way a user signs in, as the operator console shows it: a row of the backend's logins. */
export type ConsoleLogin = { id: string; kind: LoginKind; label: string; since: number }

/**
 * A user's logins (account linking's table: each email, passkey, OAuth identity and wallet that
 * opens this sub-organization), oldest first.
 *
 * @example
 * const logins = await loginsOf(store, organizationId)
 */
export async function loginsOf(store: Store, organizationId: string): Promise<ConsoleLogin[]> {
  const rows = await store.loginsOf(organizationId)
  return rows
    .map((row) => ({ id: row.id, kind: row.kind, label: row.label, since: Number(row.created_at) }))
    .sort((a, b) => a.since - b.since || a.id.localeCompare(b.id))
}

/** A user's second factors as the console shows them: a one-line summary and each factor. */
export type ConsoleMfa = { status: string; factors: MfaFactor[] }

/**
 * A user's second factors, read from the kms (`list_mfa_factors`): "not enrolled", or each
 * enrolled factor's type, oldest first, a locked one with the moment it unlocks, e.g.
 * "TOTP (locked until 2026-01-01T00:15:00.000Z), passkey".
 *
 * @example
 * const mfa = await mfaOf(kms, organizationId, userId)
 */
export async function mfaOf(kms: TurnkeyClient, organizationId: string, userId: string): Promise<ConsoleMfa> {
  const factors = await mfaFactorsOf(kms, organizationId, userId)
  if (!factors.length) return { status: 'not enrolled', factors }
  const status = factors
    .map((factor) => `${factor.type === 'totp' ? 'TOTP' : 'passkey'}${factor.lockedUntil ? ` (locked until ${factor.lockedUntil})` : ''}`)
    .join(', ')
  return { status, factors }
}
