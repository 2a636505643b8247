import { activityQueries } from './activities/queries.js'
import { type ActivityTable, joinTables, type QueryContext, type QueryTable } from './activities/table.js'
import { AUTH_ACTIVITIES } from './auth/activities.js'
import { OTP_V2_ACTIVITIES } from './auth/otpV2.js'
import { authQueries } from './auth/queries.js'
import { EXPORT_IMPORT_ACTIVITIES } from './exportImport/activities.js'
import { GRANT_ACTIVITIES } from './grants/activities.js'
import { grantQueries } from './grants/queries.js'
import { MFA_ACTIVITIES } from './mfa/activities.js'
import { mfaQueries } from './mfa/queries.js'
import { ORGANIZATION_ACTIVITIES } from './organizations/activities.js'
import { organizationQueries } from './organizations/queries.js'
import { POLICY_ACTIVITIES } from './policies/activities.js'
import { policyQueries } from './policies/queries.js'
import { PRIVATE_KEY_ACTIVITIES } from './privateKeys/activities.js'
import { privateKeyQueries } from './privateKeys/queries.js'
import { SESSION_ACTIVITIES } from './sessions/activities.js'
import { SIGNING_ACTIVITIES } from './signing/activities.js'
import { USER_ACTIVITIES } from './users/activities.js'
import { userQueries } from './users/queries.js'
import { WALLET_ACTIVITIES } from './wallets/activities.js'
import { walletQueries } from './wallets/queries.js'

// The one place the resource folders meet: each folder's activities.ts and queries.ts, joined.
// A resource folder imports only shared modules and the folders below it, never this module
// (test/structure.test.ts checks both).

/**
 * Activity types this service executes, by the exact `type` a client sends: the intent key the
 * envelope echoes and the result key the clients read (research/turnkey-api.md §1: keys do not
 * follow one rule).
 *
 * @example
 * const kind = own(ACTIVITIES, 'ACTIVITY_TYPE_CREATE_WALLET') // { op: 'create_wallet', ... }
 */
export const ACTIVITIES: ActivityTable = joinTables([
  ORGANIZATION_ACTIVITIES,
  USER_ACTIVITIES,
  WALLET_ACTIVITIES,
  PRIVATE_KEY_ACTIVITIES,
  SESSION_ACTIVITIES,
  AUTH_ACTIVITIES,
  OTP_V2_ACTIVITIES,
  EXPORT_IMPORT_ACTIVITIES,
  POLICY_ACTIVITIES,
  SIGNING_ACTIVITIES,
  GRANT_ACTIVITIES,
  MFA_ACTIVITIES,
])

/**
 * The query operations (`POST /public/v1/query/{op}`), answered with the shapes of
 * @turnkey/http's public_api.types.d.ts.
 *
 * @example
 * const queries = createQueries({ db, envelope, signerPrivateKey, oidc, now })
 * queries.get_policy!({ organizationId, policyId }, caller)
 */
export function createQueries(context: QueryContext): QueryTable {
  return joinTables([
    organizationQueries(context),
    userQueries(context),
    walletQueries(context),
    privateKeyQueries(context),
    authQueries(context),
    policyQueries(context),
    activityQueries(context),
    grantQueries(context),
    mfaQueries(context),
  ])
}
