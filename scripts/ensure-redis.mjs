#!/usr/bin/env node
// Makes sure Debian's redis-server is installed before the relay's Redis tests (they start their
// own server on a free port). Installs it with apt-get when running as root; otherwise fails with
// what to do. It never skips: without Redis the Redis suite must not pass.
import { spawnSync } from 'node:child_process'
import { existsSync } from 'node:fs'

export const redisServer = '/usr/bin/redis-server'

function fail(message) {
  throw new Error(`ensure-redis: ${message}`)
}

/** Runs a command with its output sent to stderr (stdout may be a test reporter's); fails on a non-zero exit. */
function run(command, args, env = {}) {
  console.error(`ensure-redis: ${command} ${args.join(' ')}`)
  const result = spawnSync(command, args, { stdio: ['ignore', 2, 2], env: { ...process.env, ...env } })
  if (result.error) fail(`${command} could not run: ${result.error.message}`)
  if (result.status !== 0) fail(`${command} ${args.join(' ')} failed (${result.signal ?? `exit code ${result.status}`})`)
}

/** Installs redis-server when it is missing; returns its path. */
export function ensureRedis() {
  if (!existsSync(redisServer)) {
    if (process.platform !== 'linux') fail(`${redisServer} is missing; the relay's Redis tests need Debian's redis-server package (Linux).`)
    if (process.getuid?.() !== 0) fail(`${redisServer} is missing. Install it as root: sudo apt-get update && sudo apt-get install -y redis-server`)
    if (!existsSync('/usr/bin/apt-get')) fail(`${redisServer} is missing and there is no apt-get to install it with.`)
    run('apt-get', ['update'])
    run('apt-get', ['install', '-y', '--no-install-recommends', 'redis-server'], { DEBIAN_FRONTEND: 'noninteractive' })
    if (!existsSync(redisServer)) fail(`apt-get installed redis-server but ${redisServer} is still missing.`)
  }
  const version = spawnSync(redisServer, ['--version'], { encoding: 'utf8' })
  if (version.error || version.status !== 0) fail(`${redisServer} --version failed: ${version.error?.message ?? version.stderr.trim()}`)
  return redisServer
}

if (import.meta.url === `file://${process.argv[1]}`) {
  try {
    ensureRedis()
    console.log(`ensure-redis: ${spawnSync(redisServer, ['--version'], { encoding: 'utf8' }).stdout.trim()}`)
  } catch (error) {
    console.error(error.message)
    process.exit(1)
  }
}
