import { describe, expect, test } from 'vitest'
import { ServerError } from '../src/errors.js'
import { createRouteContext } from '../src/internal/context.js'
import { DELEGATED_USER_PREFIX } from '../src/internal/delegated.js'
import { createAccountSubOrganization } from '../src/internal/subOrganization.js'
import { newEmail, useBackend } from './backend.js'

// A new account's sub-organization against the real kms: when the step that limits the backend's
// delegated user fails (security review L15), no sub-organization is left with that user as a root
// user, and trying again starts clean.

const { t } = useBackend()

const endUser = (email: string) => ({ userName: email, userEmail: email, apiKeys: [], authenticators: [], oauthProviders: [] })

/** The parent's sub-organizations, and those of them where a delegated user of the backend is a root user. */
async function subOrganizations() {
  const { organizationIds } = await t.backend.getSubOrgIds({ organizationId: t.parentOrganizationId })
  const delegatedRoots: string[] = []
  for (const organizationId of organizationIds) {
    const [{ organizationData }, { users }] = await Promise.all([t.backend.getOrganization({ organizationId }), t.backend.getUsers({ organizationId })])
    const delegated = users.filter((user) => user.userName.startsWith(DELEGATED_USER_PREFIX)).map((user) => user.userId)
    if (organizationData.rootQuorum?.userIds.some((id) => delegated.includes(id))) delegatedRoots.push(organizationId)
  }
  return { all: organizationIds, delegatedRoots }
}

describe('createAccountSubOrganization', () => {
  test('error: a failed limit step deletes the sub-organization: no delegated root user is left; the retry is clean', async () => {
    const context = createRouteContext(t.options)
    const real = context.delegated
    const refused = new ServerError(502, 'kms_unavailable', 'The key-management service did not answer')
    // The seam: the limit step fails after create_sub_organization succeeded (nothing at the kms refuses it on its own).
    const failing = {
      ...context,
      delegated: {
        ...real,
        newUser() {
          const user = real.newUser()
          return { rootUser: user.rootUser, limit: async () => Promise.reject(refused) }
        },
      },
    }
    const before = await subOrganizations()
    const email = newEmail()
    await expect(createAccountSubOrganization(failing, email, endUser(email))).rejects.toBe(refused)
    expect(await subOrganizations()).toEqual(before)

    const created = await createAccountSubOrganization(context, email, endUser(email))
    const after = await subOrganizations()
    expect(after.all).toEqual(expect.arrayContaining([...before.all, created.subOrganizationId]))
    expect(after.all).toHaveLength(before.all.length + 1)
    expect(after.delegatedRoots).toEqual(before.delegatedRoots)
    const { organizationData } = await t.backend.getOrganization({ organizationId: created.subOrganizationId })
    expect(organizationData.rootQuorum).toEqual({ threshold: 1, userIds: [created.userId] })
  })
})
