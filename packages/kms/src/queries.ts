import { p256 } from '@noble/curves/p256'
import { sha256 } from '@noble/hashes/sha2'
import { z } from 'zod'
import { decodeOidcToken, rootUserIds } from './admin/index.js'
import type { Caller } from './context.js'
import type { ActivityRow, Db, UserRow } from './db.js'
import { GrpcCode, KmsError } from './errors.js'
import { own } from './own.js'
import { invalid, notFound, parse } from './params.js'
import { mapSeries } from './sequence.js'
import {
  apiKeyView,
  authenticatorView,
  featureView,
  invitationView,
  oauthProviderView,
  policyView,
  privateKeyView,
  tagView,
  userView,
  walletAccountView,
  walletView,
} from './views.js'

/** A read: the request body (already authenticated) and who asks, to the response body. */
export type Query = (body: Record<string, unknown>, caller: Caller) => Promise<unknown>

const pagination = z
  .object({
    limit: z
      .string()
      .regex(/^\d+$/)
      .refine((limit) => Number(limit) >= 1 && Number(limit) <= 100, 'limit must be between 1 and 100')
      .optional(),
    before: z.string().optional(),
    after: z.string().optional(),
  })
  .optional()

/**
 * One page of `items` (in the order given): `limit` of them (default 10), after or before the
 * item whose id is the cursor.
 */
function page<item>(items: readonly item[], idOf: (item: item) => string, options: z.infer<typeof pagination>): item[] {
  const limit = Number(options?.limit ?? 10)
  const at = (cursor: string) => {
    const index = items.findIndex((item) => idOf(item) === cursor)
    if (index < 0) throw invalid(`unknown pagination cursor ${cursor}`)
    return index
  }
  if (options?.after) return items.slice(at(options.after) + 1, at(options.after) + 1 + limit)
  if (options?.before) {
    const end = at(options.before)
    return items.slice(Math.max(0, end - limit), end)
  }
  return items.slice(0, limit)
}

/** What `get_attestation` says about an enclave this service stands in for. */
const ATTESTED_ENCLAVES: Record<string, string> = {
  signer: 'signs export and import bundles',
  notarizer: 'signs session JWTs',
}

/**
 * The query operations (`POST /public/v1/query/{op}`), answered with the shapes of
 * @turnkey/http's public_api.types.d.ts.
 *
 * @example
 * const queries = createQueries({ db, envelope, signerPrivateKey })
 * queries.get_policy!({ organizationId, policyId }, caller)
 */
export function createQueries(options: {
  db: Db
  envelope: (row: ActivityRow) => Promise<unknown>
  signerPrivateKey: string
}): Readonly<Record<string, Query>> {
  const { db, envelope } = options

  async function user(caller: Caller, userId: string): Promise<UserRow> {
    const found = await db.user(userId, caller.organizationId)
    if (!found) throw notFound(`user ${userId} not found in organization ${caller.organizationId}`)
    return found
  }

  const string = (body: Record<string, unknown>, key: string) => {
    const value = body[key]
    if (typeof value !== 'string' || !value) throw invalid(`${key} is required`)
    return value
  }

  function found<row>(row: row | undefined, what: string, id: string, caller: Caller): row {
    if (!row) throw notFound(`${what} ${id} not found in organization ${caller.organizationId}`)
    return row
  }

  const organizationData = async (caller: Caller) => {
    const organization = (await db.organization(caller.organizationId))!
    return {
      organizationId: organization.id,
      name: organization.name,
      users: await mapSeries(await db.users(organization.id), async (row) => userView(db, row)),
      policies: (await db.policies(organization.id)).map(policyView),
      privateKeys: await mapSeries(await db.privateKeys(organization.id), async (row) => privateKeyView(db, row)),
      invitations: (await db.invitations(organization.id)).map(invitationView),
      tags: [...(await db.tags(organization.id, 'TAG_TYPE_USER')), ...(await db.tags(organization.id, 'TAG_TYPE_PRIVATE_KEY'))].map(tagView),
      rootQuorum: { threshold: organization.root_quorum_threshold, userIds: await rootUserIds(db, organization.id) },
      features: (await db.features(organization.id)).map(featureView),
      wallets: (await db.wallets(organization.id)).map(walletView),
      smartContractInterfaceReferences: [],
    }
  }

  return {
    async whoami(_, caller) {
      const organization = (await db.organization(caller.organizationId))!
      // A parent organization's key answers for its own user.
      const self = (await db.user(caller.userId, caller.homeOrganizationId))!
      return { organizationId: organization.id, organizationName: organization.name, userId: self.id, username: self.name }
    },
    async get_organization(_, caller) {
      return { organizationData: await organizationData(caller) }
    },
    async get_organization_configs(_, caller) {
      const { features, rootQuorum } = await organizationData(caller)
      return { configs: { features, quorum: rootQuorum } }
    },
    async get_attestation(body, caller) {
      const { enclaveType } = parse(z.object({ enclaveType: z.string().min(1) }), body)
      const role = own(ATTESTED_ENCLAVES, enclaveType)
      if (!role)
        throw new KmsError(
          GrpcCode.unimplemented,
          `no attestation for enclave type ${enclaveType}: this service runs no enclaves; it attests its signer key for ${Object.keys(ATTESTED_ENCLAVES).join(' and ')}`,
        )
      // Not an AWS Nitro attestation: a statement of the key that does the enclave's job here,
      // signed by that key (DER ECDSA P-256 over SHA-256 of the statement's bytes).
      const statement = JSON.stringify({
        format: 'latchkey-kms-attestation/v1',
        enclaveType,
        role,
        organizationId: caller.organizationId,
        publicKey: Buffer.from(p256.getPublicKey(options.signerPrivateKey, false)).toString('hex'),
      })
      const signature = p256.sign(sha256(new TextEncoder().encode(statement)), options.signerPrivateKey).toDERHex()
      return { attestationDocument: Buffer.from(JSON.stringify({ statement, signature })).toString('base64') }
    },
    async get_user(body, caller) {
      return { user: await userView(db, await user(caller, string(body, 'userId'))) }
    },
    async list_users(_, caller) {
      return { users: await mapSeries(await db.users(caller.organizationId), async (row) => userView(db, row)) }
    },
    async list_user_tags(_, caller) {
      return { userTags: (await db.tags(caller.organizationId, 'TAG_TYPE_USER')).map(tagView) }
    },
    async get_api_key(body, caller) {
      const apiKeyId = string(body, 'apiKeyId')
      return { apiKey: apiKeyView(found(await db.apiKey(apiKeyId, caller.organizationId), 'API key', apiKeyId, caller)) }
    },
    async get_api_keys(body, caller) {
      const userId = typeof body['userId'] === 'string' ? body['userId'] : caller.userId
      return {
        apiKeys: (await db.apiKeysOfUser(userId))
          .filter((key) => key.organization_id === caller.organizationId || key.user_id === caller.userId)
          .map(apiKeyView),
      }
    },
    async get_authenticator(body, caller) {
      const authenticatorId = string(body, 'authenticatorId')
      return {
        authenticator: authenticatorView(found(await db.authenticator(authenticatorId, caller.organizationId), 'authenticator', authenticatorId, caller)),
      }
    },
    async get_authenticators(body, caller) {
      return { authenticators: (await db.authenticatorsOfUser((await user(caller, string(body, 'userId'))).id)).map(authenticatorView) }
    },
    async get_oauth_providers(body, caller) {
      const { userId } = parse(z.object({ userId: z.string().min(1).optional() }), body)
      const providers = userId ? await db.oauthProvidersOfUser((await user(caller, userId)).id) : await db.oauthProviders(caller.organizationId)
      return { oauthProviders: providers.map(oauthProviderView) }
    },
    async get_policy(body, caller) {
      const policyId = string(body, 'policyId')
      return { policy: policyView(found(await db.policy(policyId, caller.organizationId), 'policy', policyId, caller)) }
    },
    async list_policies(_, caller) {
      return { policies: (await db.policies(caller.organizationId)).map(policyView) }
    },
    async get_private_key(body, caller) {
      const privateKeyId = string(body, 'privateKeyId')
      return { privateKey: await privateKeyView(db, found(await db.privateKey(privateKeyId, caller.organizationId), 'private key', privateKeyId, caller)) }
    },
    async list_private_keys(_, caller) {
      return { privateKeys: await mapSeries(await db.privateKeys(caller.organizationId), async (row) => privateKeyView(db, row)) }
    },
    async list_private_key_tags(_, caller) {
      return { privateKeyTags: (await db.tags(caller.organizationId, 'TAG_TYPE_PRIVATE_KEY')).map(tagView) }
    },
    async get_wallet(body, caller) {
      const walletId = string(body, 'walletId')
      return { wallet: walletView(found(await db.wallet(walletId, caller.organizationId), 'wallet', walletId, caller)) }
    },
    async list_wallets(_, caller) {
      return { wallets: (await db.wallets(caller.organizationId)).map(walletView) }
    },
    async get_wallet_account(body, caller) {
      const input = parse(
        z
          .object({ walletId: z.string().min(1), address: z.string().min(1).optional(), path: z.string().min(1).optional() })
          .refine((query) => (query.address === undefined) !== (query.path === undefined), 'give either address or path'),
        body,
      )
      found(await db.wallet(input.walletId, caller.organizationId), 'wallet', input.walletId, caller)
      const account = input.address ? await db.walletAccountByAddress(input.walletId, input.address) : await db.walletAccountByPath(input.walletId, input.path!)
      if (!account) throw notFound(`wallet ${input.walletId} has no account at ${input.address ?? input.path}`)
      return { account: walletAccountView(account) }
    },
    async list_wallet_accounts(body, caller) {
      const walletId = body['walletId']
      if (walletId !== undefined && typeof walletId !== 'string') throw invalid('walletId must be a string')
      if (walletId) found(await db.wallet(walletId, caller.organizationId), 'wallet', walletId, caller)
      const accounts = walletId ? await db.accountsOfWallet(walletId) : await db.accountsOfOrganization(caller.organizationId)
      return { accounts: accounts.map(walletAccountView) }
    },
    async get_activity(body, caller) {
      const activityId = string(body, 'activityId')
      return { activity: await envelope(found(await db.activity(activityId, caller.organizationId), 'activity', activityId, caller)) }
    },
    async list_activities(body, caller) {
      const input = parse(
        z.object({ filterByStatus: z.array(z.string()).optional(), filterByType: z.array(z.string()).optional(), paginationOptions: pagination }),
        body,
      )
      const statuses = input.filterByStatus?.length ? new Set(input.filterByStatus) : undefined
      const types = input.filterByType?.length ? new Set(input.filterByType) : undefined
      const rows = (await db.activities(caller.organizationId)).filter((row) => (!statuses || statuses.has(row.status)) && (!types || types.has(row.type)))
      return {
        activities: await mapSeries(
          page(rows, (row) => row.id, input.paginationOptions),
          (row) => envelope(row),
        ),
      }
    },
    async list_suborgs(body, caller) {
      const input = parse(
        z
          .object({ filterType: z.string().optional(), filterValue: z.string().optional(), paginationOptions: pagination })
          .refine((query) => !query.filterType || query.filterValue !== undefined, 'filterValue is required with filterType'),
        body,
      )
      const parent = caller.organizationId
      let ids: string[]
      if (!input.filterType) ids = (await db.subOrganizations(parent)).map((row) => row.id)
      else if (input.filterType === 'OIDC_TOKEN') {
        const claims = decodeOidcToken(input.filterValue!)
        const found = await mapSeries(claims.aud, (audience) => db.subOrganizationsByOauth(parent, claims.iss, audience, claims.sub))
        ids = [...new Set(found.flat().map((row) => row.id))]
      } else {
        const lookup = own(db.subOrganizationsBy, input.filterType)
        if (!lookup) throw invalid(`unsupported filterType ${input.filterType}: use ${[...Object.keys(db.subOrganizationsBy), 'OIDC_TOKEN'].join(', ')}`)
        ids = (await lookup(parent, input.filterValue!)).map((row) => row.id)
      }
      return { organizationIds: page(ids, (id) => id, input.paginationOptions) }
    },
  }
}
