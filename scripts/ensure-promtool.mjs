#!/usr/bin/env node
// Makes sure promtool (Debian's prometheus package ships it beside the server) is installed before
// the metrics tests, installing it with apt-get when running as root; otherwise fails with what to
// do. It never skips: without promtool the exposition check must not pass. `checkMetrics(text)`
// then lints an exposition as Prometheus would read it.
import { spawnSync } from 'node:child_process'
import { existsSync } from 'node:fs'

/** Where Debian puts promtool. */
export const PROMTOOL = '/usr/bin/promtool'

function fail(message) {
  throw new Error(`ensure-promtool: ${message}`)
}

function run(command, args, options = {}) {
  const { env, ...rest } = options
  const result = spawnSync(command, args, { stdio: ['ignore', 'pipe', 'pipe'], encoding: 'utf8', env: { ...process.env, ...env }, ...rest })
  if (result.error) fail(`${command} could not run: ${result.error.message}`)
  if (result.status !== 0) fail(`${command} ${args.join(' ')} failed (${result.signal ?? `exit code ${result.status}`}): ${result.stderr.trim()}`)
  return result.stdout
}

/** Installs Debian's prometheus package when promtool is missing; returns promtool's path. */
export function ensurePromtool() {
  if (existsSync(PROMTOOL)) return PROMTOOL
  if (process.platform !== 'linux') fail(`${PROMTOOL} is missing; the metrics tests need promtool (Prometheus) installed.`)
  if (process.getuid?.() !== 0) fail(`${PROMTOOL} is missing. Install it as root: sudo apt-get update && sudo apt-get install -y prometheus`)
  if (!existsSync('/usr/bin/apt-get')) fail(`${PROMTOOL} is missing and there is no apt-get to install it with.`)
  console.error('ensure-promtool: apt-get install prometheus (for promtool)')
  run('apt-get', ['update'])
  run('apt-get', ['install', '-y', '--no-install-recommends', 'prometheus'], { env: { DEBIAN_FRONTEND: 'noninteractive' } })
  if (!existsSync(PROMTOOL)) fail(`apt-get installed prometheus but ${PROMTOOL} is still missing.`)
  return PROMTOOL
}

/**
 * `promtool check metrics` on an exposition: resolves with its problems, one per line, or '' when
 * there are none.
 */
export function checkMetrics(exposition) {
  const promtool = ensurePromtool()
  const result = spawnSync(promtool, ['check', 'metrics'], { input: exposition, encoding: 'utf8' })
  if (result.error) fail(`promtool could not run: ${result.error.message}`)
  return `${result.stdout}${result.stderr}`.trim()
}

if (import.meta.url === `file://${process.argv[1]}`) console.log(ensurePromtool())
