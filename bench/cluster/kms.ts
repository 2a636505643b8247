/**
 * bench:cluster's kms section: stamped sign_raw_payload requests (each a stored activity: a write)
 * against one kms on SQLite, one on PostgreSQL and two on one PostgreSQL (clients spread over
 * both), each instance a `latchkey-kms` process, the load client a process of its own, in
 * interleaved rounds so drift on this machine hits every setup alike; each row with the CPU per
 * request of the kms processes, PostgreSQL, the load client and the machine's other work. Then
 * one of the two instances is killed with SIGKILL under create_wallet load (bench/kms/kill.ts):
 * nothing acknowledged may be lost, nothing may run twice.
 */
import { mkdtemp, rm } from 'node:fs/promises'
import { loadavg, tmpdir } from 'node:os'
import { join } from 'node:path'
import { kmsCluster, measureLoad, stopInstance } from '../kms/instances.js'
import { type KillOutcome, killMidLoad } from '../kms/kill.js'
import { fixed, freshDatabase, type Row, report } from './common.js'

const LABELS = { sqlite: 'kms, 1 instance (SQLite)', one: 'kms, 1 (PostgreSQL)', two: 'kms, 2 (one PostgreSQL)' }

export async function kmsSection(options: { postgresUrl: string; rounds: number; requests: number; concurrency: number }): Promise<number> {
  const dir = await mkdtemp(join(tmpdir(), 'latchkey-bench-cluster-kms-'))
  const clusters: Awaited<ReturnType<typeof kmsCluster>>[] = []
  const rows: Row[] = []
  let kill: KillOutcome | undefined
  try {
    const setups = [
      { label: LABELS.sqlite, cluster: await kmsCluster(1, { databasePath: join(dir, 'kms.db') }) },
      { label: LABELS.one, cluster: await kmsCluster(1, { databaseUrl: await freshDatabase(options.postgresUrl, 'cluster_kms_one') }) },
      { label: LABELS.two, cluster: await kmsCluster(2, { databaseUrl: await freshDatabase(options.postgresUrl, 'cluster_kms_two') }) },
    ]
    clusters.push(...setups.map((setup) => setup.cluster))
    for (let round = 1; round <= options.rounds; round++)
      for (const setup of setups) {
        const measured = await measureLoad(setup.label, setup.cluster, options.requests, options.concurrency)
        if (measured.firstFailure) console.error(`${setup.label}: first failure: ${measured.firstFailure}`)
        rows.push({ ...measured, round })
      }
    // Last, as it leaves the two-instance cluster with one.
    kill = await killMidLoad(setups[2]!.cluster, Math.max(200, Math.min(options.requests, 400)), options.concurrency)
  } finally {
    await Promise.all(clusters.flatMap((cluster) => cluster.instances.map((instance) => stopInstance(instance.child))))
    await rm(dir, { recursive: true, force: true })
  }
  const failed = report(
    `kms scale-out: ${options.requests} stamped sign_raw_payload requests per setup and round, ${options.concurrency} in flight, spread over the instances`,
    'requests',
    rows,
    LABELS,
    { postgresOverSqlite: 0.8, twoOverOne: 1.5 },
  )
  console.log(`  (load average ${loadavg()[0]!.toFixed(2)}: the instances, PostgreSQL and the client share this machine's cores)`)
  console.log(
    `\n  SIGKILL of one of 2 instances under create_wallet load: ${kill.requests} requests, ${kill.acknowledged} answered 200, ${kill.retried} cut by the kill and sent again (same bytes) to the instance left, ${kill.committedBeforeKill} of those answered with the activity the killed instance had committed; lost ${kill.lost}, stored twice ${kill.twice}, failed ${kill.failed} (${fixed(kill.seconds, 1)} s)`,
  )
  if (kill.firstFailure) console.error(`  kill: first failure: ${kill.firstFailure}`)
  return failed + kill.lost + kill.twice + kill.failed
}
