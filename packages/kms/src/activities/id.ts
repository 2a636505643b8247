import { randomUUID } from 'node:crypto'

/**
 * A new activity's id: a version 7 UUID (RFC 9562), 48 bits of Unix milliseconds, then 74 random
 * bits (the random bits of Node's own v4 UUID, its version nibble made 7).
 *
 * Why not v4: the id is the activities table's primary key, and a random key sends every insert to
 * a random leaf of that index, a page the cache rarely holds and the write-ahead log must write
 * whole. Ids that grow with time land on the index's last page. The creation time it shows is in
 * the activity anyway (`createdAt`), and an id still names nothing a caller may read without the
 * organization's permission.
 *
 * @example
 * newActivityId(Date.UTC(2026, 10, 30)) // '01a229c0-5400-7…-…'
 */
export function newActivityId(now: number = Date.now()): string {
  const random = randomUUID()
  const time = now.toString(16).padStart(12, '0')
  // A v4 UUID is xxxxxxxx-xxxx-4xxx-Vxxx-xxxxxxxxxxxx: keep its variant and random bits after the version.
  return `${time.slice(0, 8)}-${time.slice(8)}-7${random.slice(15)}`
}
