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

/**
 * A user's second factor. The backend has no MFA enrollment yet: every user is "not enrolled";
 * this is where the console will read enrollment once it exists.
 */
export const mfaOf = (_kmsUser: unknown): { status: 'not enrolled' } => ({ status: 'not enrolled' })
