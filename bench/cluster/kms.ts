/**
 * bench:cluster's kms section: stamped sign_raw_payload requests (each a stored activity: a write)
 * against one kms on SQLite, one on PostgreSQL and two on one PostgreSQL (clients spread over
 * both), each instance a `latchkey-kms` process, the load client a process of its own, in
 * interleaved rounds so drift on this machine hits every setup alike; each row with the CPU per
 * request of the kms processes, PostgreSQL, the load client and the machine's other work. Then
 * one of the two instances is killed with SIGKILL under create_wallet load (bench/kms/kill.ts):
 * nothing acknowledged may be lost, nothing may run twice.
 *
 * With `quotas` (cgroups, bench/cluster/cpuQuota.ts) each round also measures the one and the two
 * PostgreSQL instances each capped at `instanceCpus` cores, as pods with `resources.limits.cpu`:
 * the same processes, the cap set for those rows and lifted for the others.
 */
import { mkdtemp, rm } from 'node:fs/promises'
import { loadavg, tmpdir } from 'node:os'
import { join } from 'node:path'
import { kmsCluster, measureLoad, stopInstance } from '../kms/instances.js'
import { type KillOutcome, killMidLoad } from '../kms/kill.js'
import { fixed, freshDatabase, type Labels, quotaLabels, type Row, report } from './common.js'
import type { CpuQuotas } from './cpuQuota.js'

const LABELS = { sqlite: 'kms, 1 instance (SQLite)', one: 'kms, 1 (PostgreSQL)', two: 'kms, 2 (one PostgreSQL)' }

export async function kmsSection(options: {
  postgresUrl: string
  rounds: number
  requests: number
  concurrency: number
  /** Per-instance CPU groups, or undefined for the unconstrained rows only. */
  quotas?: CpuQuotas | undefined
  instanceCpus: number
}): Promise<number> {
  const labels: Labels = { ...LABELS, quota: options.quotas ? quotaLabels(LABELS, options.instanceCpus) : undefined }
  const dir = await mkdtemp(join(tmpdir(), 'latchkey-bench-cluster-kms-'))
  const clusters: Awaited<ReturnType<typeof kmsCluster>>[] = []
  const rows: Row[] = []
  let kill: KillOutcome | undefined
  try {
    const sqlite = await kmsCluster(1, { databasePath: join(dir, 'kms.db') })
    clusters.push(sqlite)
    const one = await kmsCluster(1, { databaseUrl: await freshDatabase(options.postgresUrl, 'cluster_kms_one') }, options.quotas, 'kms-one')
    clusters.push(one)
    const two = await kmsCluster(2, { databaseUrl: await freshDatabase(options.postgresUrl, 'cluster_kms_two') }, options.quotas, 'kms-two')
    clusters.push(two)
    const setups: { label: string; cluster: typeof one; cpus?: number }[] = [
      { label: LABELS.sqlite, cluster: sqlite },
      { label: LABELS.one, cluster: one },
      { label: LABELS.two, cluster: two },
      ...(labels.quota
        ? [
            { label: labels.quota.one, cluster: one, cpus: labels.quota.cpus },
            { label: labels.quota.two, cluster: two, cpus: labels.quota.cpus },
          ]
        : []),
    ]
    for (let round = 1; round <= options.rounds; round++)
      for (const setup of setups) {
        setup.cluster.limit(setup.cpus)
        try {
          const measured = await measureLoad(setup.label, setup.cluster, options.requests, options.concurrency)
          if (measured.firstFailure) console.error(`${setup.label}: first failure: ${measured.firstFailure}`)
          rows.push({ ...measured, round })
        } finally {
          setup.cluster.limit(undefined)
        }
      }
    // Last, as it leaves the two-instance cluster with one.
    kill = await killMidLoad(two, Math.max(200, Math.min(options.requests, 400)), options.concurrency)
  } finally {
    await Promise.all(clusters.flatMap((cluster) => cluster.instances.map((instance) => stopInstance(instance.child))))
    await rm(dir, { recursive: true, force: true })
  }
  const failed = report(
    `kms scale-out: ${options.requests} stamped sign_raw_payload requests per setup and round, ${options.concurrency} in flight, spread over the instances`,
    'requests',
    rows,
    labels,
    { postgresOverSqlite: 0.8, twoOverOne: 1.5 },
  )
  console.log(`  (load average ${loadavg()[0]!.toFixed(2)}: the instances, PostgreSQL and the client share this machine's cores)`)
  console.log(
    `\n  SIGKILL of one of 2 instances under create_wallet load: ${kill.requests} requests, ${kill.acknowledged} answered 200, ${kill.retried} cut by the kill and sent again (same bytes) to the instance left, ${kill.committedBeforeKill} of those answered with the activity the killed instance had committed; lost ${kill.lost}, stored twice ${kill.twice}, failed ${kill.failed} (${fixed(kill.seconds, 1)} s)`,
  )
  if (kill.firstFailure) console.error(`  kill: first failure: ${kill.firstFailure}`)
  return failed + kill.lost + kill.twice + kill.failed
}
