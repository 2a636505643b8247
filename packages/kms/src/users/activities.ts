import { randomUUID } from 'node:crypto'
import { z } from 'zod'
import { type ActivityTable, userIn } from '../activities/table.js'
import { insertOauthProviders, oauthProviderParams } from '../auth/oauth.js'
import type { ActivityContext } from '../context.js'
import { inheritedVerification, insertApiKey, insertAuthenticator, refuseKeyLifetimes } from '../credentials.js'
import { alreadyExists, failedPrecondition, invalid, notFound } from '../errors.js'
import { listOf } from '../lists.js'
import { pinRootQuorum, rootUserIds } from '../organizations/quorum.js'
import { apiKeyParams, authenticatorParams, ids, parse } from '../params.js'
import { mapSeries } from '../sequence.js'
import { verifyRegistration } from '../webauthn.js'
import { TAG_ACTIVITIES } from './tags.js'

// Users of an organization beyond its root users: creating, changing and deleting them, their
// API keys and passkeys, invitations, and their tags (users/tags.ts).

const phoneNumber = z.string().regex(/^\+[1-9]\d{6,14}$/, 'must be an E.164 phone number, such as +14155550100')
const userParams = z.object({
  userName: z.string().min(1).max(256),
  userEmail: z.email().optional(),
  userPhoneNumber: phoneNumber.optional(),
  apiKeys: listOf(apiKeyParams, 'API keys').default([]),
  authenticators: listOf(authenticatorParams, 'authenticators').default([]),
  oauthProviders: listOf(oauthProviderParams, 'OAuth providers').default([]),
  userTags: listOf(z.string().min(1), 'tags').default([]),
})
type UserParams = z.infer<typeof userParams>

/** Refuses an email another user of the organization (or of the same request) already has. */
async function checkEmails(context: ActivityContext, emails: readonly (string | undefined)[], exceptUserId?: string) {
  const seen = new Set<string>()
  for (const email of emails) {
    if (!email) continue
    const owner = await context.db.userByEmail(context.caller.organizationId, email)
    if ((owner && owner.id !== exceptUserId) || seen.has(email.toLowerCase()))
      throw alreadyExists(`a user with email ${email} already exists in organization ${context.caller.organizationId}`)
    seen.add(email.toLowerCase())
  }
}

/** Tags of users in the organization the request names. */
async function checkUserTags(context: ActivityContext, tagIds: readonly string[]) {
  for (const tagId of tagIds)
    if (!(await context.db.tag(tagId, context.caller.organizationId, 'TAG_TYPE_USER')))
      throw notFound(`user tag ${tagId} not found in organization ${context.caller.organizationId}`)
}

/**
 * Creates users (not root users: the root quorum stays as it was). Passkeys are verified and every
 * reference checked before anything is written; then all of them are written, or none.
 */
async function createUsers(context: ActivityContext, users: readonly UserParams[], field: string) {
  const { db, caller, now } = context
  // As at create_api_keys: a key that never expires only for the parent organization's own users; a
  // user added to a sub-organization later would otherwise carry a key that outlives every cap.
  const inSubOrganization = (await db.organization(caller.organizationId))!.parent_id !== null
  for (const [index, user] of users.entries()) refuseKeyLifetimes(context, user.apiKeys, `${field}.${index}.apiKeys`, inSubOrganization)
  const passkeys = await Promise.all(
    users.map((user) =>
      Promise.all(user.authenticators.map(async (authenticator) => ({ authenticator, verified: await verifyRegistration(authenticator, context.webauthn) }))),
    ),
  )
  for (const { verified } of passkeys.flat())
    if (await db.authenticatorByCredential(verified.credentialId)) throw alreadyExists(`credential ${verified.credentialId} is already registered`)
  await checkEmails(
    context,
    users.map((user) => user.userEmail),
  )
  await checkUserTags(
    context,
    users.flatMap((user) => user.userTags),
  )
  return await db.transaction(async () => {
    await pinRootQuorum(db, caller.organizationId)
    const at = now()
    return await mapSeries(users, async (user, index) => {
      const userId = randomUUID()
      await db.insertUser({ id: userId, organization_id: caller.organizationId, name: user.userName, email: user.userEmail ?? null, created_at: at })
      if (user.userPhoneNumber)
        await db.updateUser({ id: userId, name: user.userName, email: user.userEmail ?? null, phone_number: user.userPhoneNumber, updated_at: at })
      for (const key of user.apiKeys) await insertApiKey(db, userId, caller.organizationId, key, at)
      for (const { authenticator, verified } of passkeys[index]!) await insertAuthenticator(db, userId, caller.organizationId, authenticator, verified, at)
      await insertOauthProviders(context, userId, user.oauthProviders)
      for (const tagId of new Set(user.userTags)) await db.addTagMember(tagId, userId), await db.touchTag(at, tagId)
      return userId
    })
  })
}

/** Applies a change of name, email, phone number or tags to a user. */
async function updateUser(
  context: ActivityContext,
  userId: string,
  change: { userName?: string | undefined; userEmail?: string | undefined; userPhoneNumber?: string | undefined; userTagIds?: readonly string[] | undefined },
) {
  const { db, caller, now } = context
  const user = await userIn(context, userId)
  const details = (await db.userDetails(user.id, caller.organizationId))!
  if (change.userEmail !== undefined) await checkEmails(context, [change.userEmail], user.id)
  if (change.userTagIds) await checkUserTags(context, change.userTagIds)
  const at = now()
  await db.transaction(async () => {
    await db.updateUser({
      id: user.id,
      name: change.userName ?? user.name,
      email: change.userEmail === '' ? null : (change.userEmail ?? user.email),
      phone_number: change.userPhoneNumber ?? details.phone_number,
      updated_at: at,
    })
    // An empty list leaves the tags as they are (the clients send [] when not changing them).
    if (change.userTagIds?.length) {
      for (const tagId of await db.tagsOf(user.id)) if (await db.tag(tagId, caller.organizationId, 'TAG_TYPE_USER')) await db.removeTagMember(tagId, user.id)
      for (const tagId of new Set(change.userTagIds)) await db.addTagMember(tagId, user.id), await db.touchTag(at, tagId)
    }
  })
  return { userId: user.id }
}

/** Refuses when the credential that stamped this request is among those being removed. */
function refuseOwnCredential(context: ActivityContext, credentials: readonly string[], what: string) {
  if (context.caller.credential && credentials.includes(context.caller.credential))
    throw failedPrecondition(`${what} stamps this request and cannot remove itself: stamp the request with another credential`)
}

export const USER_ACTIVITIES: ActivityTable = {
  ...TAG_ACTIVITIES,
  ACTIVITY_TYPE_CREATE_API_KEYS_V2: {
    op: 'create_api_keys',
    intentKey: 'createApiKeysIntentV2',
    resultKey: 'createApiKeysResult',
    async run(params, context) {
      const { userId, apiKeys } = parse(z.object({ userId: z.string(), apiKeys: listOf(apiKeyParams, 'API keys').min(1) }), params)
      const { db, caller, now } = context
      // A key that never expires only for the parent organization's own users (a backend's key); in
      // a sub-organization every key lapses within the kms's maximum lifetime.
      const inSubOrganization = (await db.organization(caller.organizationId))!.parent_id !== null
      refuseKeyLifetimes(context, apiKeys, 'apiKeys', inSubOrganization)
      if (!(await db.user(userId, caller.organizationId))) throw notFound(`user ${userId} not found in organization ${caller.organizationId}`)
      const apiKeyIds: string[] = []
      // Keys for the caller's own user carry the caller's verification, unrenewed (policies/freshVerification.ts).
      const verifiedAt = inheritedVerification(caller, userId)
      for (const key of apiKeys) apiKeyIds.push(await insertApiKey(db, userId, caller.organizationId, key, now(), { verifiedAt }))
      return { apiKeyIds }
    },
  },
  ACTIVITY_TYPE_CREATE_AUTHENTICATORS_V2: {
    op: 'create_authenticators',
    intentKey: 'createAuthenticatorsIntentV2',
    resultKey: 'createAuthenticatorsResult',
    async run(params, context) {
      const input = parse(z.object({ userId: z.string().min(1), authenticators: listOf(authenticatorParams, 'authenticators').min(1) }), params)
      const { db, caller, now } = context
      if (!(await db.user(input.userId, caller.organizationId))) throw notFound(`user ${input.userId} not found in organization ${caller.organizationId}`)
      const verified = await Promise.all(
        input.authenticators.map(async (authenticator) => ({ authenticator, verified: await verifyRegistration(authenticator, context.webauthn) })),
      )
      for (const { verified: passkey } of verified)
        if (await db.authenticatorByCredential(passkey.credentialId)) throw alreadyExists(`credential ${passkey.credentialId} is already registered`)
      const authenticatorIds: string[] = []
      for (const { authenticator, verified: passkey } of verified)
        authenticatorIds.push(await insertAuthenticator(db, input.userId, caller.organizationId, authenticator, passkey, now()))
      return { authenticatorIds }
    },
  },
  ACTIVITY_TYPE_CREATE_USERS_V4: {
    op: 'create_users',
    intentKey: 'createUsersIntentV4',
    resultKey: 'createUsersResult',
    async run(params, context) {
      const input = parse(z.object({ users: listOf(userParams, 'users').min(1) }), params)
      return { userIds: await createUsers(context, input.users, 'users') }
    },
  },
  ACTIVITY_TYPE_CREATE_API_ONLY_USERS: {
    op: 'create_api_only_users',
    intentKey: 'createApiOnlyUsersIntent',
    resultKey: 'createApiOnlyUsersResult',
    async run(params, context) {
      const input = parse(
        z.object({
          apiOnlyUsers: z
            .array(
              z.object({
                userName: z.string().min(1).max(256),
                userEmail: z.email().optional(),
                userTags: listOf(z.string().min(1), 'tags').default([]),
                apiKeys: listOf(apiKeyParams.omit({ curveType: true }), 'API keys').min(1),
              }),
            )
            .min(1)
            .max(100),
        }),
        params,
      )
      return {
        userIds: await createUsers(
          context,
          input.apiOnlyUsers.map((user) => ({ ...user, authenticators: [], oauthProviders: [] })),
          'apiOnlyUsers',
        ),
      }
    },
  },
  ACTIVITY_TYPE_UPDATE_USER: {
    op: 'update_user',
    intentKey: 'updateUserIntent',
    resultKey: 'updateUserResult',
    async run(params, context) {
      const input = parse(
        z.object({
          userId: z.string().min(1),
          userName: z.string().min(1).max(256).optional(),
          userEmail: z.email().optional(),
          userTagIds: listOf(z.string().min(1), 'tags').optional(),
          userPhoneNumber: phoneNumber.optional(),
        }),
        params,
      )
      return await updateUser(context, input.userId, input)
    },
  },
  ACTIVITY_TYPE_UPDATE_USER_NAME: {
    op: 'update_user_name',
    intentKey: 'updateUserNameIntent',
    resultKey: 'updateUserNameResult',
    async run(params, context) {
      const input = parse(z.object({ userId: z.string().min(1), userName: z.string().min(1).max(256) }), params)
      return await updateUser(context, input.userId, input)
    },
  },
  ACTIVITY_TYPE_UPDATE_USER_EMAIL: {
    op: 'update_user_email',
    intentKey: 'updateUserEmailIntent',
    resultKey: 'updateUserEmailResult',
    async run(params, context) {
      // An empty userEmail removes the user's email, as Turnkey's does.
      const input = parse(
        z.object({ userId: z.string().min(1), userEmail: z.union([z.email(), z.literal('')]), verificationToken: z.string().optional() }),
        params,
      )
      if (input.verificationToken) throw invalid('verificationToken is not supported: this service issues no OTP verification tokens')
      return await updateUser(context, input.userId, { userEmail: input.userEmail })
    },
  },
  ACTIVITY_TYPE_UPDATE_USER_PHONE_NUMBER: {
    op: 'update_user_phone_number',
    intentKey: 'updateUserPhoneNumberIntent',
    resultKey: 'updateUserPhoneNumberResult',
    async run(params, context) {
      const input = parse(z.object({ userId: z.string().min(1), userPhoneNumber: phoneNumber, verificationToken: z.string().optional() }), params)
      if (input.verificationToken) throw invalid('verificationToken is not supported: this service issues no OTP verification tokens')
      return await updateUser(context, input.userId, { userPhoneNumber: input.userPhoneNumber })
    },
  },
  ACTIVITY_TYPE_DELETE_USERS: {
    op: 'delete_users',
    intentKey: 'deleteUsersIntent',
    resultKey: 'deleteUsersResult',
    async run(params, context) {
      const input = parse(z.object({ userIds: ids('user') }), params)
      const { db, caller } = context
      for (const userId of input.userIds) await userIn(context, userId)
      if (caller.homeOrganizationId === caller.organizationId && input.userIds.includes(caller.userId))
        throw failedPrecondition('a user cannot delete themselves: the key that stamps this request would go with them')
      const roots = await rootUserIds(db, caller.organizationId)
      const remaining = roots.filter((userId) => !input.userIds.includes(userId))
      const threshold = (await db.organization(caller.organizationId))!.root_quorum_threshold
      if (remaining.length === 0) throw failedPrecondition(`cannot delete the last root user of organization ${caller.organizationId}`)
      if (remaining.length < threshold)
        throw failedPrecondition(
          `deleting these users would leave ${remaining.length} root users, fewer than the root quorum threshold of ${threshold}: change the root quorum first (update_root_quorum)`,
        )
      await db.transaction(async () => {
        await pinRootQuorum(db, caller.organizationId)
        for (const userId of input.userIds) await db.deleteUser(userId)
      })
      return { userIds: input.userIds }
    },
  },
  ACTIVITY_TYPE_DELETE_API_KEYS: {
    op: 'delete_api_keys',
    intentKey: 'deleteApiKeysIntent',
    resultKey: 'deleteApiKeysResult',
    async run(params, context) {
      const input = parse(z.object({ userId: z.string().min(1), apiKeyIds: ids('API key') }), params)
      const { db, caller } = context
      const user = await userIn(context, input.userId)
      const keys = await mapSeries(input.apiKeyIds, async (apiKeyId) => {
        const key = await db.apiKey(apiKeyId, caller.organizationId)
        if (key?.user_id !== user.id) throw notFound(`API key ${apiKeyId} not found for user ${user.id}`)
        return key
      })
      for (const key of keys) refuseOwnCredential(context, [key.public_key], `API key ${key.id}`)
      await db.transaction(async () => {
        for (const key of keys) await db.deleteApiKey(key.id)
      })
      return { apiKeyIds: input.apiKeyIds }
    },
  },
  ACTIVITY_TYPE_DELETE_AUTHENTICATORS: {
    op: 'delete_authenticators',
    intentKey: 'deleteAuthenticatorsIntent',
    resultKey: 'deleteAuthenticatorsResult',
    async run(params, context) {
      const input = parse(z.object({ userId: z.string().min(1), authenticatorIds: ids('authenticator') }), params)
      const { db, caller } = context
      const user = await userIn(context, input.userId)
      const authenticators = await mapSeries(input.authenticatorIds, async (authenticatorId) => {
        const authenticator = await db.authenticator(authenticatorId, caller.organizationId)
        if (authenticator?.user_id !== user.id) throw notFound(`authenticator ${authenticatorId} not found for user ${user.id}`)
        return authenticator
      })
      for (const authenticator of authenticators) refuseOwnCredential(context, [authenticator.credential_id], `authenticator ${authenticator.id}`)
      await db.transaction(async () => {
        for (const authenticator of authenticators) await db.deleteAuthenticator(authenticator.id)
      })
      return { authenticatorIds: input.authenticatorIds }
    },
  },
  ACTIVITY_TYPE_CREATE_INVITATIONS: {
    op: 'create_invitations',
    intentKey: 'createInvitationsIntent',
    resultKey: 'createInvitationsResult',
    async run(params, context) {
      const input = parse(
        z.object({
          invitations: z
            .array(
              z.object({
                receiverUserName: z.string().min(1).max(256),
                receiverUserEmail: z.email(),
                receiverUserTags: listOf(z.string().min(1), 'tags').default([]),
                accessType: z.enum(['ACCESS_TYPE_WEB', 'ACCESS_TYPE_API', 'ACCESS_TYPE_ALL']),
                senderUserId: z.string().min(1),
              }),
            )
            .min(1)
            .max(100),
        }),
        params,
      )
      const { db, caller, now } = context
      const organization = (await db.organization(caller.organizationId))!
      const senders = await mapSeries(input.invitations, async (invitation) => userIn(context, invitation.senderUserId))
      await checkUserTags(
        context,
        input.invitations.flatMap((invitation) => invitation.receiverUserTags),
      )
      const at = now()
      const rows = input.invitations.map((invitation) => ({
        id: randomUUID(),
        organization_id: caller.organizationId,
        receiver_user_name: invitation.receiverUserName,
        receiver_email: invitation.receiverUserEmail,
        receiver_user_tags: JSON.stringify(invitation.receiverUserTags),
        access_type: invitation.accessType,
        sender_user_id: invitation.senderUserId,
        status: 'INVITATION_STATUS_CREATED',
        created_at: at,
        updated_at: at,
      }))
      // Queued in the outbox with the invitations; sent once they commit.
      for (const [index, row] of rows.entries())
        await context.mailer.send({
          to: row.receiver_email,
          subject: `${senders[index]!.name} invited you to ${organization.name}`,
          text: `${senders[index]!.name} invited you, as ${row.receiver_user_name}, to ${organization.name}.\n\nInvitation: ${row.id}`,
          html: `<p>${escapeHtml(senders[index]!.name)} invited you, as ${escapeHtml(row.receiver_user_name)}, to ${escapeHtml(organization.name)}.</p><p>Invitation: <code>${row.id}</code></p>`,
        })
      await db.transaction(async () => {
        for (const row of rows) await db.insertInvitation(row)
      })
      return { invitationIds: rows.map((row) => row.id) }
    },
  },
  ACTIVITY_TYPE_DELETE_INVITATION: {
    op: 'delete_invitation',
    intentKey: 'deleteInvitationIntent',
    resultKey: 'deleteInvitationResult',
    async run(params, context) {
      const { invitationId } = parse(z.object({ invitationId: z.string().min(1) }), params)
      const { db, caller } = context
      if (!(await db.invitation(invitationId, caller.organizationId)))
        throw notFound(`invitation ${invitationId} not found in organization ${caller.organizationId}`)
      await db.transaction(async () => await db.deleteInvitation(invitationId))
      return { invitationId }
    },
  },
}

const escapeHtml = (text: string) => text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`)
