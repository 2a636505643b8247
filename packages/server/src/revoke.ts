import type { AuditTrail } from '@latchkey/service/database'
import { sql } from 'kysely'
import { ServerError } from './errors.js'
import { callKms } from './internal/context.js'
import type { DelegatedAccess } from './internal/delegated.js'
import type { KnownAccount, Store } from './store.js'

/** Whose sessions to end: the account of an email, every session of an address, or the account of a sub-organization. */
export type RevokeTarget = { email: string } | { address: string } | { organization: string }

/** What `revokeSessions` ended. */
export type RevokeResult = {
  /** Browser sessions deleted (their cookies are dead at once). */
  sessions: number
  /** Refresh tokens of those sessions' JWTs deleted (no new access JWT can be issued). */
  refreshTokens: number
  /** The user's API keys deleted in the kms (the browser's session keys), per sub-organization. */
  apiKeys: { organizationId: string; userId: string; apiKeyIds: string[] }[]
}

export type RevokeOptions = {
  store: Store
  /** The backend's delegated user in each sub-organization: it deletes the user's session keys. */
  delegated: DelegatedAccess
  audit: AuditTrail
  now: () => number
}

/**
 * Ends a person's sessions everywhere (`latchkey-server sessions revoke`): the backend's browser
 * sessions and their refresh tokens, in one transaction, then, as the delegated user of the
 * person's sub-organization, every API key of the end user in the kms (the session keys browsers
 * registered), so that no session key signs again. Recorded in the audit trail.
 *
 * @example
 * const result = await revokeSessions({ email: 'ada@example.com' }, { store, delegated, audit, now: Date.now })
 */
export async function revokeSessions(target: RevokeTarget, options: RevokeOptions): Promise<RevokeResult> {
  const { store, delegated, audit, now } = options
  const account: KnownAccount | undefined =
    'email' in target
      ? await store.account(target.email.trim().toLowerCase())
      : 'address' in target
        ? await store.accountByAddress(target.address)
        : await store.accountByOrganization(target.organization)
  const organizations = account ? [account.organization_id] : 'organization' in target ? [target.organization] : []
  const counts = await store.database.transaction(
    async (trx) => {
      const sessions = trx.selectFrom('sessions').select('id')
      const matching =
        'email' in target
          ? sessions.where((where) =>
              where.or([
                where('email', '=', target.email.trim().toLowerCase()),
                ...(organizations.length ? [where('organization_id', 'in', organizations)] : []),
              ]),
            )
          : 'address' in target
            ? sessions.where((where) =>
                where.or([
                  sql<boolean>`lower(address) = ${target.address.toLowerCase()}`,
                  ...(organizations.length ? [where('organization_id', 'in', organizations)] : []),
                ]),
              )
            : sessions.where('organization_id', '=', target.organization)
      const ids = (await matching.execute()).map((row) => row.id)
      if (!ids.length) return { sessions: 0, refreshTokens: 0 }
      const tokens = await trx.deleteFrom('refresh_tokens').where('session_id', 'in', ids).executeTakeFirst()
      const deleted = await trx.deleteFrom('sessions').where('id', 'in', ids).executeTakeFirst()
      return { sessions: Number(deleted.numDeletedRows), refreshTokens: Number(tokens.numDeletedRows) }
    },
    { isolation: 'read committed' },
  )
  const apiKeys: RevokeResult['apiKeys'] = []
  if (account) {
    const apiKeyIds = await deleteSessionKeys(delegated, { organizationId: account.organization_id, userId: account.user_id }, now)
    apiKeys.push({ organizationId: account.organization_id, userId: account.user_id, apiKeyIds })
  }
  await audit.record({
    action: 'sessions revoke',
    outcome: 'completed',
    actorUser: 'operator',
    target: {
      ...(account ? { organization: account.organization_id, user: account.user_id, address: account.address } : {}),
      ...('organization' in target ? { organization: target.organization } : {}),
      ...('address' in target ? { address: target.address } : {}),
    },
    email: 'email' in target ? target.email : account?.email,
    reason: `${counts.sessions} sessions, ${counts.refreshTokens} refresh tokens, ${apiKeys.reduce((sum, entry) => sum + entry.apiKeyIds.length, 0)} session keys`,
  })
  return { ...counts, apiKeys }
}

/** Whose kms keys `deleteSessionKeys` deletes: `publicKeys` only, or every one (with or without a session here) but `except`. */
export type SessionKeysOf = {
  organizationId: string
  userId: string
  publicKeys?: readonly string[] | undefined
  except?: readonly string[] | undefined
}

/**
 * Deletes in the kms, as the delegated user of the user's sub-organization (its policy allows
 * delete_api_keys for the end user's keys), the user's API keys: those whose public key is in
 * `publicKeys`, or every one (the browsers' session keys, whether or not a session here knows
 * them: a passkey's stamp_login never posted to /auth/login) when it is not given; never one in
 * `except`. Answers the ids deleted; a key already gone is no error.
 *
 * @example
 * await deleteSessionKeys(delegated, { organizationId, userId, publicKeys: [session.session_public_key] }, Date.now)
 */
export async function deleteSessionKeys(delegated: DelegatedAccess, user: SessionKeysOf, now: () => number): Promise<string[]> {
  const { organizationId, userId, publicKeys, except = [] } = user
  const client = await delegated.client(organizationId)
  const { apiKeys } = await client.getApiKeys({ organizationId, userId })
  const apiKeyIds = apiKeys
    .filter((key) => (!publicKeys || publicKeys.includes(key.credential.publicKey)) && !except.includes(key.credential.publicKey))
    .map((key) => key.apiKeyId)
  if (apiKeyIds.length)
    await client.deleteApiKeys({ type: 'ACTIVITY_TYPE_DELETE_API_KEYS', timestampMs: String(now()), organizationId, parameters: { userId, apiKeyIds } })
  return apiKeyIds
}

/**
 * `deleteSessionKeys` as a route runs it (signing out, unlinking a login): a kms refusal or outage
 * is the route's error, answered and audited, so the caller ends nothing until the keys are gone
 * and the user can try again; an account whose owner removed the backend's delegated user keeps
 * its keys, left to the owner (nothing here could delete them, and refusing would not either).
 *
 * @example
 * await endSessionKeys(context, { organizationId, userId, except: [session.session_public_key] })
 */
export async function endSessionKeys(context: { delegated: DelegatedAccess; now: () => number }, user: SessionKeysOf): Promise<void> {
  await callKms(() => deleteSessionKeys(context.delegated, user, context.now)).catch((error: unknown) => {
    if (!(error instanceof ServerError && error.code === 'no_delegated_access')) throw error
  })
}
