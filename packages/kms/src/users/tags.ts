import { randomUUID } from 'node:crypto'
import { z } from 'zod'
import type { ActivityTable } from '../activities/table.js'
import type { ActivityContext } from '../context.js'
import { alreadyExists, notFound } from '../errors.js'
import { listOf } from '../lists.js'
import { ids, parse } from '../params.js'
import { mapSeries } from '../sequence.js'
import type { TagType } from '../storage/tables.js'

// Tags group users, or private keys, under a name (policies refer to them; tags themselves grant nothing).

const KINDS = {
  TAG_TYPE_USER: {
    noun: 'user tag',
    member: 'user',
    exists: async (context: ActivityContext, id: string) => (await context.db.user(id, context.caller.organizationId)) !== undefined,
  },
  TAG_TYPE_PRIVATE_KEY: {
    noun: 'private key tag',
    member: 'private key',
    exists: async (context: ActivityContext, id: string) => (await context.db.privateKey(id, context.caller.organizationId)) !== undefined,
  },
} as const

async function checkMembers(context: ActivityContext, type: TagType, memberIds: readonly string[]) {
  const kind = KINDS[type]
  for (const id of memberIds)
    if (!(await kind.exists(context, id))) throw notFound(`${kind.member} ${id} not found in organization ${context.caller.organizationId}`)
}

async function checkName(context: ActivityContext, type: TagType, name: string) {
  if (await context.db.tagByName(context.caller.organizationId, type, name)) throw alreadyExists(`a ${KINDS[type].noun} named "${name}" already exists`)
}

async function tagOf(context: ActivityContext, type: TagType, tagId: string) {
  const tag = await context.db.tag(tagId, context.caller.organizationId, type)
  if (!tag) throw notFound(`${KINDS[type].noun} ${tagId} not found in organization ${context.caller.organizationId}`)
  return tag
}

async function createTag(context: ActivityContext, type: TagType, name: string, memberIds: readonly string[]) {
  await checkName(context, type, name)
  await checkMembers(context, type, memberIds)
  const id = randomUUID()
  const at = context.now()
  await context.db.transaction(async () => {
    await context.db.insertTag({ id, organization_id: context.caller.organizationId, name, type, created_at: at, updated_at: at })
    for (const memberId of memberIds) await context.db.addTagMember(id, memberId)
  })
  return id
}

async function updateTag(
  context: ActivityContext,
  type: TagType,
  change: { tagId: string; newName: string | undefined; add: readonly string[]; remove: readonly string[] },
) {
  const { db, now } = context
  const tag = await tagOf(context, type, change.tagId)
  if (change.newName !== undefined && change.newName !== tag.name) await checkName(context, type, change.newName)
  await checkMembers(context, type, change.add)
  const at = now()
  await db.transaction(async () => {
    await db.renameTag(change.newName ?? tag.name, at, tag.id)
    for (const memberId of change.remove) await db.removeTagMember(tag.id, memberId)
    for (const memberId of change.add) await db.addTagMember(tag.id, memberId)
  })
  return tag.id
}

/** Deletes tags; returns the members that carried them. */
async function deleteTags(context: ActivityContext, type: TagType, tagIds: readonly string[]) {
  const tags = await mapSeries(tagIds, async (tagId) => tagOf(context, type, tagId))
  const members = new Set((await mapSeries(tags, async (tag) => context.db.tagMembers(tag.id))).flat())
  await context.db.transaction(async () => {
    for (const tag of tags) await context.db.deleteTag(tag.id)
  })
  return [...members]
}

const name = z.string().min(1).max(256)

export const TAG_ACTIVITIES: ActivityTable = {
  ACTIVITY_TYPE_CREATE_USER_TAG: {
    op: 'create_user_tag',
    intentKey: 'createUserTagIntent',
    resultKey: 'createUserTagResult',
    async run(params, context) {
      const input = parse(z.object({ userTagName: name, userIds: listOf(z.string().min(1), 'user ids').default([]) }), params)
      return { userTagId: await createTag(context, 'TAG_TYPE_USER', input.userTagName, input.userIds), userIds: input.userIds }
    },
  },
  ACTIVITY_TYPE_UPDATE_USER_TAG: {
    op: 'update_user_tag',
    intentKey: 'updateUserTagIntent',
    resultKey: 'updateUserTagResult',
    async run(params, context) {
      const input = parse(
        z.object({
          userTagId: z.string().min(1),
          newUserTagName: name.optional(),
          addUserIds: listOf(z.string().min(1), 'user ids').default([]),
          removeUserIds: listOf(z.string().min(1), 'user ids').default([]),
        }),
        params,
      )
      return {
        userTagId: await updateTag(context, 'TAG_TYPE_USER', {
          tagId: input.userTagId,
          newName: input.newUserTagName,
          add: input.addUserIds,
          remove: input.removeUserIds,
        }),
      }
    },
  },
  ACTIVITY_TYPE_DELETE_USER_TAGS: {
    op: 'delete_user_tags',
    intentKey: 'deleteUserTagsIntent',
    resultKey: 'deleteUserTagsResult',
    async run(params, context) {
      const input = parse(z.object({ userTagIds: ids('user tag') }), params)
      return { userTagIds: input.userTagIds, userIds: await deleteTags(context, 'TAG_TYPE_USER', input.userTagIds) }
    },
  },
  ACTIVITY_TYPE_CREATE_PRIVATE_KEY_TAG: {
    op: 'create_private_key_tag',
    intentKey: 'createPrivateKeyTagIntent',
    resultKey: 'createPrivateKeyTagResult',
    async run(params, context) {
      const input = parse(z.object({ privateKeyTagName: name, privateKeyIds: listOf(z.string().min(1), 'private key ids').default([]) }), params)
      return {
        privateKeyTagId: await createTag(context, 'TAG_TYPE_PRIVATE_KEY', input.privateKeyTagName, input.privateKeyIds),
        privateKeyIds: input.privateKeyIds,
      }
    },
  },
  ACTIVITY_TYPE_UPDATE_PRIVATE_KEY_TAG: {
    op: 'update_private_key_tag',
    intentKey: 'updatePrivateKeyTagIntent',
    resultKey: 'updatePrivateKeyTagResult',
    async run(params, context) {
      const input = parse(
        z.object({
          privateKeyTagId: z.string().min(1),
          newPrivateKeyTagName: name.optional(),
          addPrivateKeyIds: listOf(z.string().min(1), 'private key ids').default([]),
          removePrivateKeyIds: listOf(z.string().min(1), 'private key ids').default([]),
        }),
        params,
      )
      return {
        privateKeyTagId: await updateTag(context, 'TAG_TYPE_PRIVATE_KEY', {
          tagId: input.privateKeyTagId,
          newName: input.newPrivateKeyTagName,
          add: input.addPrivateKeyIds,
          remove: input.removePrivateKeyIds,
        }),
      }
    },
  },
  ACTIVITY_TYPE_DELETE_PRIVATE_KEY_TAGS: {
    op: 'delete_private_key_tags',
    intentKey: 'deletePrivateKeyTagsIntent',
    resultKey: 'deletePrivateKeyTagsResult',
    async run(params, context) {
      const input = parse(z.object({ privateKeyTagIds: ids('private key tag') }), params)
      return { privateKeyTagIds: input.privateKeyTagIds, privateKeyIds: await deleteTags(context, 'TAG_TYPE_PRIVATE_KEY', input.privateKeyTagIds) }
    },
  },
}
