#!/usr/bin/env node
// Makes sure Debian's Chromium is at /usr/bin/chromium before the end-to-end tests (playwright-core
// drives it; we never download a browser bundle). Installs it with apt-get when running as root;
// otherwise fails with what to do. It never skips: without a browser the e2e tests must not pass.
import { spawnSync } from 'node:child_process'
import { existsSync } from 'node:fs'

const chromium = '/usr/bin/chromium'

function fail(message) {
  console.error(`ensure-chromium: ${message}`)
  process.exit(1)
}

/** Runs a command with its output streamed to ours; fails on a non-zero exit. */
function run(command, args, env = {}) {
  console.log(`ensure-chromium: ${command} ${args.join(' ')}`)
  const result = spawnSync(command, args, { stdio: 'inherit', env: { ...process.env, ...env } })
  if (result.error) fail(`${command} could not run: ${result.error.message}`)
  if (result.status !== 0) fail(`${command} ${args.join(' ')} failed (${result.signal ?? `exit code ${result.status}`})`)
}

if (!existsSync(chromium)) {
  if (process.platform !== 'linux') fail(`${chromium} is missing; the end-to-end tests need Debian's chromium package (Linux).`)
  if (process.getuid?.() !== 0) fail(`${chromium} is missing. Install it as root: sudo apt-get update && sudo apt-get install -y chromium`)
  if (!existsSync('/usr/bin/apt-get')) fail(`${chromium} is missing and there is no apt-get to install it with (the tests expect Debian's chromium package).`)
  run('apt-get', ['update'])
  run('apt-get', ['install', '-y', 'chromium'], { DEBIAN_FRONTEND: 'noninteractive' })
  if (!existsSync(chromium)) fail(`apt-get installed chromium but ${chromium} is still missing.`)
}

// Debian's launcher script may print shell noise on stderr; the version is on stdout.
const version = spawnSync(chromium, ['--version'], { encoding: 'utf8' })
if (version.error || version.status !== 0 || !version.stdout.trim())
  fail(`${chromium} --version failed: ${version.error?.message ?? (version.stderr.trim() || `exit code ${version.status}`)}`)
console.log(`ensure-chromium: ${version.stdout.trim()}`)
