#!/usr/bin/env node
// Makes sure SoftHSM2 (Debian's softhsm2: the PKCS#11 module and softhsm2-util) is installed before
// the kms's HSM tests, installing it with apt-get when running as root; otherwise fails with what to
// do. It never skips: without a PKCS#11 token those tests must not pass. `createToken()` then makes a
// throwaway token for a test: its own config and token directory, an initialized token and PIN file.
import { spawnSync } from 'node:child_process'
import { existsSync, mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

/** Where Debian puts the PKCS#11 module. */
export const SOFTHSM_MODULE = '/usr/lib/softhsm/libsofthsm2.so'

function fail(message) {
  throw new Error(`ensure-softhsm: ${message}`)
}

function run(command, args, options = {}) {
  const { env, ...rest } = options
  const result = spawnSync(command, args, { stdio: ['ignore', 'pipe', 'pipe'], encoding: 'utf8', env: { ...process.env, ...env }, ...rest })
  if (result.error) fail(`${command} could not run: ${result.error.message}`)
  if (result.status !== 0) fail(`${command} ${args.join(' ')} failed (${result.signal ?? `exit code ${result.status}`}): ${result.stderr.trim()}`)
  return result.stdout
}

const installed = () => existsSync(SOFTHSM_MODULE) && spawnSync('sh', ['-c', 'command -v softhsm2-util']).status === 0

/** Installs SoftHSM2 when its module or softhsm2-util is missing; returns the module's path. */
export function ensureSoftHsm() {
  if (installed()) return SOFTHSM_MODULE
  if (process.platform !== 'linux') fail(`${SOFTHSM_MODULE} is missing; the kms HSM tests need SoftHSM2 installed.`)
  if (process.getuid?.() !== 0) fail(`${SOFTHSM_MODULE} is missing. Install it as root: sudo apt-get update && sudo apt-get install -y softhsm2`)
  if (!existsSync('/usr/bin/apt-get')) fail(`${SOFTHSM_MODULE} is missing and there is no apt-get to install it with.`)
  console.error('ensure-softhsm: apt-get install softhsm2')
  run('apt-get', ['update'])
  run('apt-get', ['install', '-y', '--no-install-recommends', 'softhsm2'], { env: { DEBIAN_FRONTEND: 'noninteractive' } })
  if (!installed()) fail(`apt-get installed softhsm2 but ${SOFTHSM_MODULE} or softhsm2-util is still missing.`)
  return SOFTHSM_MODULE
}

/**
 * A fresh token labelled `label` with user PIN `pin`, in its own directory: returns the config path
 * (SOFTHSM2_CONF, for every process that uses the token), the PIN file and the module path.
 */
export function createToken({ label, pin }) {
  const module = ensureSoftHsm()
  const directory = mkdtempSync(join(tmpdir(), 'latchkey-softhsm-'))
  const tokens = join(directory, 'tokens')
  spawnSync('mkdir', ['-p', tokens])
  const conf = join(directory, 'softhsm2.conf')
  writeFileSync(conf, `directories.tokendir = ${tokens}\nobjectstore.backend = file\nlog.level = ERROR\n`)
  const pinFile = join(directory, 'pin')
  writeFileSync(pinFile, `${pin}\n`, { mode: 0o600 })
  run('softhsm2-util', ['--init-token', '--free', '--label', label, '--pin', pin, '--so-pin', `${pin}-so`], { env: { SOFTHSM2_CONF: conf } })
  return { conf, pinFile, module, directory, tokens }
}
