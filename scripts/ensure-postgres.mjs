#!/usr/bin/env node
// Makes sure PostgreSQL's server binaries (initdb, pg_ctl) are installed before the kms's
// PostgreSQL test run, installing Debian's postgresql package with apt-get when running as root;
// otherwise fails with what to do. It never skips: without PostgreSQL that suite must not pass.
// `startPostgres()` then runs a throwaway cluster for the tests: its own temp dir, a free port,
// trust authentication, no fsync.
import { spawnSync } from 'node:child_process'
import { chownSync, existsSync, mkdirSync, mkdtempSync, readdirSync, realpathSync, rmSync } from 'node:fs'
import { createServer } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

const DEBIAN_VERSIONS = '/usr/lib/postgresql'

function fail(message) {
  throw new Error(`ensure-postgres: ${message}`)
}

/** Runs a command with its output sent to stderr (stdout may be a test reporter's); fails on a non-zero exit. */
function run(command, args, options = {}) {
  console.error(`ensure-postgres: ${command} ${args.join(' ')}`)
  const { env, ...rest } = options
  const result = spawnSync(command, args, { stdio: ['ignore', 2, 2], env: { ...process.env, ...env }, ...rest })
  if (result.error) fail(`${command} could not run: ${result.error.message}`)
  if (result.status !== 0) fail(`${command} ${args.join(' ')} failed (${result.signal ?? `exit code ${result.status}`})`)
}

/** The directory holding initdb, pg_ctl and createdb: on PATH, else Debian's newest /usr/lib/postgresql/<version>/bin. */
function findBinaries() {
  const onPath = spawnSync('sh', ['-c', 'command -v pg_ctl'], { encoding: 'utf8' }).stdout.trim()
  if (onPath) {
    // Where pg_ctl really is (a symlink on PATH may lead to /usr/lib/postgresql/<version>/bin), with createdb beside it.
    const real = realpathSync(onPath)
    const dir = real.slice(0, real.lastIndexOf('/'))
    if (existsSync(join(dir, 'initdb'))) return dir
  }
  if (!existsSync(DEBIAN_VERSIONS)) return undefined
  const versions = readdirSync(DEBIAN_VERSIONS)
    .filter((version) => existsSync(join(DEBIAN_VERSIONS, version, 'bin', 'pg_ctl')) && existsSync(join(DEBIAN_VERSIONS, version, 'bin', 'initdb')))
    .sort((a, b) => Number(b) - Number(a))
  return versions[0] ? join(DEBIAN_VERSIONS, versions[0], 'bin') : undefined
}

/** Installs PostgreSQL when initdb or pg_ctl is missing; returns the directory holding them. */
export function ensurePostgres() {
  let bin = findBinaries()
  if (!bin) {
    if (process.platform !== 'linux') fail('initdb and pg_ctl are missing; the kms PostgreSQL tests need a PostgreSQL server installed (on PATH).')
    if (process.getuid?.() !== 0) fail('initdb and pg_ctl are missing. Install them as root: sudo apt-get update && sudo apt-get install -y postgresql')
    if (!existsSync('/usr/bin/apt-get')) fail('initdb and pg_ctl are missing and there is no apt-get to install them with.')
    run('apt-get', ['update'])
    // policy-rc.d-less containers refuse to start the package's own cluster; that is fine, the tests start theirs.
    run('apt-get', ['install', '-y', '--no-install-recommends', 'postgresql'], { env: { DEBIAN_FRONTEND: 'noninteractive' } })
    bin = findBinaries()
    if (!bin) fail(`apt-get installed postgresql but initdb and pg_ctl are still not in ${DEBIAN_VERSIONS}/<version>/bin.`)
  }
  const version = spawnSync(join(bin, 'pg_ctl'), ['--version'], { encoding: 'utf8' })
  if (version.error || version.status !== 0) fail(`pg_ctl --version failed: ${version.error?.message ?? version.stderr.trim()}`)
  return bin
}

/** initdb and postgres refuse to run as root: as root, the cluster runs as the `postgres` user (Debian's package creates it). */
function clusterOwner() {
  if (process.getuid?.() !== 0) return {}
  const id = (flag) => spawnSync('id', [flag, 'postgres'], { encoding: 'utf8' })
  const uid = id('-u')
  const gid = id('-g')
  if (uid.status !== 0 || gid.status !== 0) fail('running as root, and there is no `postgres` user to run the test cluster as (useradd --system postgres).')
  return { uid: Number(uid.stdout.trim()), gid: Number(gid.stdout.trim()) }
}

const freePort = () =>
  new Promise((resolve, reject) => {
    const server = createServer()
    server.once('error', reject)
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address()
      server.close(() => resolve(port))
    })
  })

/**
 * Starts a throwaway PostgreSQL cluster (installed first when missing) with a database `latchkey`;
 * returns its URL and `stop()`, which ends the server and deletes its files.
 *
 * @example
 * const postgres = await startPostgres()
 * // postgres.url: postgres://postgres@127.0.0.1:<port>/latchkey
 * await postgres.stop()
 */
export async function startPostgres() {
  const bin = ensurePostgres()
  const owner = clusterOwner()
  const dir = mkdtempSync(join(tmpdir(), 'latchkey-postgres-'))
  const data = join(dir, 'data')
  mkdirSync(data)
  if (owner.uid !== undefined) {
    chownSync(dir, owner.uid, owner.gid)
    chownSync(data, owner.uid, owner.gid)
  }
  const port = await freePort()
  const asOwner = { ...owner, cwd: dir }
  const settings = `-k ${dir} -p ${port} -c listen_addresses=127.0.0.1 -c fsync=off -c synchronous_commit=off -c full_page_writes=off`
  /** pg_ctl start or stop of this cluster, with the settings it started with. */
  const control = (action) =>
    action === 'start'
      ? run(join(bin, 'pg_ctl'), ['start', '-w', '-D', data, '-l', join(dir, 'server.log'), '-o', settings], asOwner)
      : run(join(bin, 'pg_ctl'), ['stop', '-w', '-m', 'fast', '-D', data], asOwner)
  try {
    run(join(bin, 'initdb'), ['-D', data, '-A', 'trust', '-U', 'postgres', '--no-sync', '-E', 'UTF8', '--locale', 'C'], asOwner)
    // -w: pg_ctl returns once the server accepts connections.
    control('start')
  } catch (error) {
    rmSync(dir, { recursive: true, force: true })
    throw error
  }
  const stop = () => {
    // Stopped already (a test that restores the cluster stops it itself): only the files go.
    if (existsSync(join(data, 'postmaster.pid'))) control('stop')
    rmSync(dir, { recursive: true, force: true })
  }
  try {
    run(join(bin, 'createdb'), ['-h', dir, '-p', String(port), '-U', 'postgres', 'latchkey'], asOwner)
  } catch (error) {
    stop()
    throw error
  }
  return {
    url: `postgres://postgres@127.0.0.1:${port}/latchkey`,
    stop: async () => stop(),
    // For tests that archive, back up and restore the cluster (pgBackRest): its files and control.
    cluster: { bin, dir, data, port, owner, start: () => control('start'), stopServer: () => control('stop') },
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  try {
    const bin = ensurePostgres()
    console.log(`ensure-postgres: ${spawnSync(join(bin, 'pg_ctl'), ['--version'], { encoding: 'utf8' }).stdout.trim()} (${bin})`)
  } catch (error) {
    console.error(error.message)
    process.exit(1)
  }
}
