#!/usr/bin/env node
/**
 * Builds every library package once and packs each publishable one (not `private`) into a
 * directory, as `npm publish` would ship it: what the packaging test, the consumer apps and the
 * size bench install.
 *
 *   node scripts/pack.mjs [directory] [--no-build]   prints one tarball path per line
 *
 * The directory defaults to a new temporary one. `--no-build` packs the dist/ already there.
 *
 * @example
 * import { packPackages } from '../scripts/pack.mjs'
 * const packed = await packPackages({ destination: '/tmp/latchkey-packs' })
 * // [{ name: '@latchkey/core', version: '0.1.0', tarball: '/tmp/latchkey-packs/latchkey-core-0.1.0.tgz', directory: '…/packages/core' }, …]
 */
import { execFile } from 'node:child_process'
import { mkdirSync, mkdtempSync, readdirSync, readFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { promisify } from 'node:util'

const run = promisify(execFile)

/** The repository root (this file is in scripts/). */
export const repoRoot = fileURLToPath(new URL('..', import.meta.url))

/**
 * @typedef {{ name: string; version: string; directory: string; private: boolean }} LibraryPackage
 * @typedef {{ name: string; version: string; directory: string; tarball: string }} PackedPackage
 */

/**
 * Every package under packages/ (sorted by directory), read from its package.json.
 * @returns {LibraryPackage[]}
 */
export function libraryPackages() {
  const root = join(repoRoot, 'packages')
  return readdirSync(root, { withFileTypes: true })
    .filter((entry) => entry.isDirectory())
    .map((entry) => join(root, entry.name))
    .filter((directory) => readdirSync(directory).includes('package.json'))
    .sort()
    .map((directory) => {
      const pkg = JSON.parse(readFileSync(join(directory, 'package.json'), 'utf8'))
      return { name: pkg.name, version: pkg.version, directory, private: pkg.private === true }
    })
}

/** The packages `npm publish` would publish: every library package that is not private. */
export const publishablePackages = () => libraryPackages().filter((pkg) => !pkg.private)

/**
 * Builds (unless `build: false`) and packs every publishable package into `destination`.
 * `npm pack` runs with `--ignore-scripts`: the one build here replaces each package's `prepack`.
 *
 * @param {{ destination?: string; build?: boolean; log?: (line: string) => void }} [options]
 * @returns {Promise<PackedPackage[]>} one entry per package, in directory order
 */
export async function packPackages({ destination = mkdtempSync(join(tmpdir(), 'latchkey-packs-')), build = true, log = () => {} } = {}) {
  const packages = publishablePackages()
  mkdirSync(destination, { recursive: true })
  const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm'
  if (build) {
    log('building every package (npm run build)')
    await run(npm, ['run', 'build'], { cwd: repoRoot, maxBuffer: 64 * 1024 * 1024 })
  }
  log(`packing ${packages.length} packages into ${destination}`)
  const workspaces = packages.flatMap((pkg) => ['--workspace', pkg.name])
  const { stdout } = await run(npm, ['pack', '--json', '--ignore-scripts', '--pack-destination', resolve(destination), ...workspaces], {
    cwd: repoRoot,
    maxBuffer: 64 * 1024 * 1024,
  })
  /** @type {{ name: string; version: string; filename: string }[]} */
  const reports = JSON.parse(stdout)
  return packages.map((pkg) => {
    const report = reports.find((item) => item.name === pkg.name)
    if (!report) throw new Error(`npm pack did not pack ${pkg.name}`)
    return { name: pkg.name, version: report.version, directory: pkg.directory, tarball: join(resolve(destination), report.filename) }
  })
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const args = process.argv.slice(2)
  const unknown = args.filter((arg) => arg.startsWith('-') && arg !== '--no-build')
  if (unknown.length > 0 || args.filter((arg) => !arg.startsWith('-')).length > 1) {
    console.error(`usage: node scripts/pack.mjs [directory] [--no-build]${unknown.length > 0 ? ` (unknown option ${unknown[0]})` : ''}`)
    process.exit(2)
  }
  const destination = args.find((arg) => !arg.startsWith('-'))
  try {
    const packed = await packPackages({ ...(destination ? { destination } : {}), build: !args.includes('--no-build'), log: (line) => console.error(line) })
    for (const { tarball } of packed) console.log(tarball)
  } catch (error) {
    console.error(`pack: ${error instanceof Error ? error.message : String(error)}`)
    if (error && typeof error === 'object' && 'stderr' in error) console.error(String(error.stderr))
    process.exit(1)
  }
}
