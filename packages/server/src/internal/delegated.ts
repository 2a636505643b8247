import { createECDH, createHmac, randomBytes } from 'node:crypto'
import type { TurnkeyClient } from '@turnkey/http'
import { incompleteAnswer, ServerError } from '../errors.js'
import { apiKeyStamper, KmsClient } from './kmsClient.js'
import { SESSION_KEY_SECONDS } from './schemas.js'

// Delegated access (docs.turnkey.com/concepts/policies/delegated-access-backend). The parent
// organization may only read its sub-organizations and start sign-ins there; to register a
// browser's session key (or link an OAuth identity) the backend acts as a user of the
// sub-organization: a second root user created with it, which then writes its own policy and
// leaves the root quorum, so all it keeps is what that policy allows.
//
// Each sub-organization's delegated user holds its own P-256 key, derived from the delegation
// secret and a salt kept in that user's name: nothing more to store, and no public key shared
// between organizations (our kms names one user per API key). The secret defaults to the backend's
// API private key (how every existing account was made); set on its own, it lets the API key
// rotate without losing the accounts.

/** How the delegated user's name starts; the rest is the salt its key is derived with. */
export const DELEGATED_USER_PREFIX = 'Latchkey delegated access '

/** The activity types the delegated user's policies allow (`delegatedPolicies` narrows each). */
export const DELEGATED_ACTIVITIES = ['ACTIVITY_TYPE_CREATE_API_KEYS_V2', 'ACTIVITY_TYPE_CREATE_OAUTH_PROVIDERS_V2'] as const

/**
 * What the delegated user does for account linking (issue 28), for the end user only: it removes
 * an unlinked passkey or OAuth identity, and the email of an unlinked email login (update_user_email
 * to no email, and only that). It never adds a passkey or sets an email: those give a way in, so
 * the user's own key stamps them in the consent frame, and the backend only carries the body.
 */
export const DELEGATED_LINKING_ACTIVITIES = ['ACTIVITY_TYPE_DELETE_AUTHENTICATORS', 'ACTIVITY_TYPE_DELETE_OAUTH_PROVIDERS'] as const

/**
 * What else the delegated user may do, in a policy of its own: delete API keys, so that
 * `latchkey-server sessions revoke` ends the end user's session keys.
 */
export const DELEGATED_REVOCATION_ACTIVITY = 'ACTIVITY_TYPE_DELETE_API_KEYS'

/**
 * The delegated user's policies: session keys for the end user only, each expiring within the
 * longest session key the backend registers, and OAuth identities for the end user only, proven by
 * an ID token (never trusted `oidcClaims`). A key without an expiry has no `expiration_seconds`,
 * so its clause errors and the policy does not allow it.
 */
export function delegatedPolicies(endUserId: string, delegatedUserId: string) {
  const consensus = `approvers.any(user, user.id == '${delegatedUserId}')`
  return [
    {
      policyName: 'Latchkey backend: session keys for the end user',
      effect: 'EFFECT_ALLOW' as const,
      consensus,
      condition: `activity.type == 'ACTIVITY_TYPE_CREATE_API_KEYS_V2' && activity.params.user_id == '${endUserId}' && activity.params.api_keys.all(key, key.expires && key.expiration_seconds <= ${SESSION_KEY_SECONDS.max})`,
      notes: `The backend registers browser session keys of at most ${SESSION_KEY_SECONDS.max} s for the end user; nothing else.`,
    },
    {
      policyName: 'Latchkey backend: OAuth links by ID token',
      effect: 'EFFECT_ALLOW' as const,
      consensus,
      condition: `activity.type == 'ACTIVITY_TYPE_CREATE_OAUTH_PROVIDERS_V2' && activity.params.user_id == '${endUserId}' && activity.params.oauth_providers.all(provider, provider.has_oidc_claims == false)`,
      notes: 'The backend links the end user’s OAuth identities, each proven by an ID token; nothing else.',
    },
    {
      policyName: 'Latchkey backend: unlinked sign-in methods',
      effect: 'EFFECT_ALLOW' as const,
      consensus,
      condition: `(${DELEGATED_LINKING_ACTIVITIES.map((type) => `activity.type == '${type}'`).join(' || ')}) && activity.params.user_id == '${endUserId}'`,
      notes: 'The backend removes the end user’s unlinked passkeys and OAuth identities; it adds none (the user’s own key does, in the consent frame).',
    },
    {
      policyName: 'Latchkey backend: unlinked email',
      effect: 'EFFECT_ALLOW' as const,
      consensus,
      condition: `activity.type == 'ACTIVITY_TYPE_UPDATE_USER_EMAIL' && activity.params.user_id == '${endUserId}' && activity.params.user_email == ''`,
      notes: 'The backend removes the end user’s unlinked email; it sets none (the user’s own key does, in the consent frame).',
    },
    {
      policyName: 'Latchkey backend: revoking session keys',
      effect: 'EFFECT_ALLOW' as const,
      consensus,
      condition: `activity.type == '${DELEGATED_REVOCATION_ACTIVITY}'`,
      notes: 'An operator’s `latchkey-server sessions revoke` deletes the end user’s session keys.',
    },
  ]
}

/** The order of P-256: a private key is a scalar in [1, n - 1]. */
const P256_ORDER = 0xffffffff00000000ffffffffffffffffbce6faada7179e84f3b9cac2fc632551n

type KeyPair = { apiPublicKey: string; apiPrivateKey: string }

/**
 * The delegated user's key for `salt`: HMAC-SHA256 keyed by the delegation secret (64 hex
 * characters; by default the backend's API private key), retried until it is a valid scalar.
 */
export function delegatedKey(delegationSecret: string, salt: string): KeyPair {
  for (let counter = 0; ; counter++) {
    const candidate = createHmac('sha256', Buffer.from(delegationSecret, 'hex')).update(`latchkey delegated access\n${salt}\n${counter}`).digest()
    const scalar = BigInt(`0x${candidate.toString('hex')}`)
    if (scalar === 0n || scalar >= P256_ORDER) continue
    const apiPrivateKey = candidate.toString('hex')
    const ecdh = createECDH('prime256v1')
    ecdh.setPrivateKey(candidate)
    return { apiPrivateKey, apiPublicKey: ecdh.getPublicKey('hex', 'compressed') }
  }
}

/**
 * The delegated-access side of the backend: the root user to add when it creates a
 * sub-organization, the step that limits it right after, and its client for later.
 *
 * @example
 * const delegated = createDelegatedAccess({ kms, kmsUrl, delegationSecret: apiPrivateKey, now })
 * const { rootUser, limit } = delegated.newUser()
 */
export function createDelegatedAccess(options: { kms: TurnkeyClient; kmsUrl: string; delegationSecret: string; now: () => number }) {
  // The backend's own client (kmsClient.ts): keep-alive connections, the request id forwarded.
  const clientFor = (keys: KeyPair): TurnkeyClient => new KmsClient({ baseUrl: options.kmsUrl }, apiKeyStamper(keys))
  // Sub-organization → its delegated client; a look-up costs a query, so recent ones are kept.
  const known = new Map<string, TurnkeyClient>()

  return {
    /**
     * A root user for create_sub_organization's `rootUsers` (after the end user), and `limit`, to
     * call with the result: as that user it writes its policy, then leaves the root quorum to the
     * end user. Until `limit` succeeds the delegated user is a root user.
     */
    newUser() {
      const salt = randomBytes(16).toString('hex')
      const keys = delegatedKey(options.delegationSecret, salt)
      const rootUser = {
        userName: `${DELEGATED_USER_PREFIX}${salt}`,
        apiKeys: [{ apiKeyName: 'delegated access', publicKey: keys.apiPublicKey, curveType: 'API_KEY_CURVE_P256' as const }],
        authenticators: [],
        oauthProviders: [],
      }
      async function limit(subOrganizationId: string, rootUserIds: readonly string[]) {
        const [endUserId, delegatedUserId] = rootUserIds
        if (!endUserId || !delegatedUserId) throw incompleteAnswer()
        const client = clientFor(keys)
        await client.createPolicies({
          type: 'ACTIVITY_TYPE_CREATE_POLICIES',
          timestampMs: String(options.now()),
          organizationId: subOrganizationId,
          parameters: { policies: delegatedPolicies(endUserId, delegatedUserId) },
        })
        await client.updateRootQuorum({
          type: 'ACTIVITY_TYPE_UPDATE_ROOT_QUORUM',
          timestampMs: String(options.now() + 1),
          organizationId: subOrganizationId,
          parameters: { threshold: 1, userIds: [endUserId] },
        })
        known.set(subOrganizationId, client)
      }
      return { rootUser, limit }
    },

    /**
     * The delegated user's client in a sub-organization, found by its name (the parent may read
     * the sub-organization's users). 403 `no_delegated_access` for one created without it.
     */
    async client(organizationId: string): Promise<TurnkeyClient> {
      const cached = known.get(organizationId)
      if (cached) return cached
      const { users } = await options.kms.getUsers({ organizationId })
      const delegated = users.find((user) => user.userName.startsWith(DELEGATED_USER_PREFIX))
      if (!delegated) throw new ServerError(403, 'no_delegated_access', 'This account was created without delegated access; the backend cannot act in it')
      const client = clientFor(delegatedKey(options.delegationSecret, delegated.userName.slice(DELEGATED_USER_PREFIX.length)))
      if (known.size >= 10_000) known.clear()
      known.set(organizationId, client)
      return client
    },
  }
}

export type DelegatedAccess = ReturnType<typeof createDelegatedAccess>
