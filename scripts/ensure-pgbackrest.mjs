#!/usr/bin/env node
// Makes sure pgBackRest (Debian's pgbackrest) is installed before the kms's point-in-time recovery
// test, installing it with apt-get when running as root; otherwise fails with what to do. It never
// skips: without pgBackRest that test must not pass. `pgBackRest(cluster)` then configures one
// stanza for a throwaway cluster of ensure-postgres.mjs: its repository, lock and log directories
// inside the cluster's own directory, and the archive command that ships its WAL there.
import { spawnSync } from 'node:child_process'
import { chownSync, existsSync, mkdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'

const PGBACKREST = '/usr/bin/pgbackrest'

function fail(message) {
  throw new Error(`ensure-pgbackrest: ${message}`)
}

/** Installs pgBackRest when it is missing; returns its path. */
export function ensurePgBackRest() {
  if (existsSync(PGBACKREST)) return PGBACKREST
  if (process.platform !== 'linux') fail(`${PGBACKREST} is missing; the kms point-in-time recovery test needs pgBackRest installed.`)
  if (process.getuid?.() !== 0) fail(`${PGBACKREST} is missing. Install it as root: sudo apt-get update && sudo apt-get install -y pgbackrest`)
  if (!existsSync('/usr/bin/apt-get')) fail(`${PGBACKREST} is missing and there is no apt-get to install it with.`)
  console.error('ensure-pgbackrest: apt-get install pgbackrest')
  for (const args of [['update'], ['install', '-y', '--no-install-recommends', 'pgbackrest']]) {
    const result = spawnSync('apt-get', args, { stdio: ['ignore', 2, 2], env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' } })
    if (result.status !== 0) fail(`apt-get ${args.join(' ')} failed (${result.signal ?? `exit code ${result.status}`})`)
  }
  if (!existsSync(PGBACKREST)) fail(`apt-get installed pgbackrest but ${PGBACKREST} is still missing.`)
  return PGBACKREST
}

/**
 * One pgBackRest stanza for a throwaway cluster (`startPostgres().cluster`): `archiveCommand` for
 * the cluster's `archive_command`, and `run(args)`, which runs pgBackRest on the stanza as the
 * cluster's owner and answers its output (throwing with its stderr on a non-zero exit).
 *
 * @example
 * const backRest = pgBackRest(postgres.cluster)
 * backRest.run(['stanza-create'])
 * backRest.run(['backup', '--type=full'])
 */
export function pgBackRest(cluster, { stanza = 'kms' } = {}) {
  const bin = ensurePgBackRest()
  const paths = { repo: join(cluster.dir, 'repo'), lock: join(cluster.dir, 'lock'), log: join(cluster.dir, 'log') }
  for (const path of Object.values(paths)) {
    mkdirSync(path)
    if (cluster.owner.uid !== undefined) chownSync(path, cluster.owner.uid, cluster.owner.gid)
  }
  const config = join(cluster.dir, 'pgbackrest.conf')
  writeFileSync(
    config,
    [
      '[global]',
      `repo1-path=${paths.repo}`,
      'repo1-retention-full=2',
      `lock-path=${paths.lock}`,
      `log-path=${paths.log}`,
      'log-level-console=warn',
      'log-level-file=off',
      // A checkpoint at once rather than the next scheduled one: the backup starts now.
      'start-fast=y',
      `[${stanza}]`,
      `pg1-path=${cluster.data}`,
      `pg1-port=${cluster.port}`,
      `pg1-socket-path=${cluster.dir}`,
      'pg1-user=postgres',
      '',
    ].join('\n'),
  )
  const base = [`--config=${config}`, `--stanza=${stanza}`]
  return {
    archiveCommand: `${bin} ${base.join(' ')} archive-push %p`,
    run(args) {
      const result = spawnSync(bin, [...base, ...args], { encoding: 'utf8', cwd: cluster.dir, uid: cluster.owner.uid, gid: cluster.owner.gid })
      if (result.error) fail(`pgbackrest could not run: ${result.error.message}`)
      if (result.status !== 0) fail(`pgbackrest ${args.join(' ')} failed (exit code ${result.status}): ${(result.stderr || result.stdout).trim()}`)
      return result.stdout
    },
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  try {
    console.log(`ensure-pgbackrest: ${spawnSync(ensurePgBackRest(), ['version'], { encoding: 'utf8' }).stdout.trim()}`)
  } catch (error) {
    console.error(error.message)
    process.exit(1)
  }
}
