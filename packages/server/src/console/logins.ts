import type { Store } from '../store.js'

/** One way a user signs in, as the operator console shows it. */
export type ConsoleLogin =
  | { kind: 'email'; email: string; since: number }
  | { kind: 'passkey'; name: string | null; credentialId: string; since: number }
  | { kind: 'oauth'; provider: string; issuer: string }

/** What the kms says of a sub-organization's user (get_user), as far as logins go. */
export type KmsUserLogins = {
  oauthProviders?: readonly { providerName?: string; issuer?: string }[] | undefined
}

/**
 * A user's logins, from what the backend knows today: the email account (an email code or an OAuth
 * provider proved it), the passkeys it registered at sign-up, and the OAuth identities on the
 * kms's user record. The one place the console reads logins from, so that it can switch to a
 * table of logins when the backend keeps one.
 *
 * @example
 * const logins = await loginsOf(store, organizationId, (await kms.getUser({ organizationId, userId })).user)
 */
export async function loginsOf(store: Store, organizationId: string, kmsUser: KmsUserLogins): Promise<ConsoleLogin[]> {
  const db = store.database.db
  const emails = await db.selectFrom('accounts').select(['email', 'created_at']).where('organization_id', '=', organizationId).orderBy('created_at').execute()
  const passkeys = await db
    .selectFrom('passkey_accounts')
    .select(['credential_id', 'passkey_identifier', 'created_at'])
    .where('organization_id', '=', organizationId)
    .orderBy('created_at')
    .execute()
  return [
    ...emails.map((row) => ({ kind: 'email' as const, email: row.email, since: Number(row.created_at) })),
    ...passkeys.map((row) => ({ kind: 'passkey' as const, name: row.passkey_identifier, credentialId: row.credential_id, since: Number(row.created_at) })),
    ...(kmsUser.oauthProviders ?? []).map((provider) => ({ kind: 'oauth' as const, provider: provider.providerName ?? '', issuer: provider.issuer ?? '' })),
  ]
}

/**
 * A user's second factor. The backend has no MFA enrollment yet: every user is "not enrolled";
 * this is where the console will read enrollment once it exists.
 */
export const mfaOf = (_kmsUser: unknown): { status: 'not enrolled' } => ({ status: 'not enrolled' })
