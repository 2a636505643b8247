import { OAUTH_ACTIVITIES } from './oauth.js'
import { ORGANIZATION_ACTIVITIES } from './organization.js'
import { POLICY_ACTIVITIES } from './policies.js'
import { PRIVATE_KEY_ACTIVITIES } from './privateKeys.js'
import type { ActivityTable } from './table.js'
import { TAG_ACTIVITIES } from './tags.js'
import { USER_ACTIVITIES } from './users.js'
import { WALLET_ACTIVITIES } from './wallets.js'

/**
 * The key-management activities beyond wallets, signing and sign-in: users, API keys, passkeys,
 * tags, policies, invitations, OAuth, private keys, organization settings and deletions. Spread
 * into ACTIVITIES (activities.ts).
 */
export const ADMIN_ACTIVITIES: ActivityTable = {
  ...USER_ACTIVITIES,
  ...TAG_ACTIVITIES,
  ...POLICY_ACTIVITIES,
  ...ORGANIZATION_ACTIVITIES,
  ...WALLET_ACTIVITIES,
  ...PRIVATE_KEY_ACTIVITIES,
  ...OAUTH_ACTIVITIES,
}

export { decodeOidcToken, nonceFor } from './oauth.js'
export { heldPrivateKey } from './privateKeys.js'
export { rootUserIds } from './quorum.js'
