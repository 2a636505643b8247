import type { Db } from '../db.js'

// The root quorum: the users whose approvals an organization's activities need, and how many.
// An organization records its members once its users change; until then every user it has was
// created with it as a root user (create_sub_organization, the parent organization's first user).

/** The root users of an organization. */
export async function rootUserIds(db: Db, organizationId: string): Promise<string[]> {
  // One round trip: authorize() asks on every activity.
  return await db.rootUserIds(organizationId)
}

/** Records the root users as they are now, before users are added or removed. */
export async function pinRootQuorum(db: Db, organizationId: string): Promise<string[]> {
  const members = await rootUserIds(db, organizationId)
  await db.setRootQuorumMembers(organizationId, members)
  return members
}
