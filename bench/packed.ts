/**
 * The packages as users get them, for `bench:size`: every publishable package built and packed
 * (scripts/pack.mjs), the tarballs installed with npm into a temporary directory outside the
 * repository together with the React, React DOM and viem versions the workspace uses, and the
 * bench apps copied next to them. A bundler building an app there sees what it sees in a user's
 * project: `node_modules/@latchkey/*` with their `exports` maps (default conditions, `dist/`) and
 * their own dependency ranges, nothing of the workspace.
 */
import { execFile } from 'node:child_process'
import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { packPackages, publishablePackages } from '../scripts/pack.mjs'

const run = promisify(execFile)
const repoRoot = join(import.meta.dirname, '..')

/** The version of `name` installed in the workspace, so the packed apps use the same. */
const workspaceVersion = (name: string): string =>
  (JSON.parse(readFileSync(join(repoRoot, 'node_modules', name, 'package.json'), 'utf8')) as { version: string }).version

/** Modification times of the files under `dir` (recursively). */
const mtimes = (dir: string): number[] =>
  existsSync(dir) ? (readdirSync(dir, { recursive: true, encoding: 'utf8' }) as string[]).map((file) => statSync(join(dir, file)).mtimeMs) : []

/**
 * Whether every publishable package's dist/ was built after the last change to its src/, its
 * package.json and the build configuration (as after `npm run build`, or test:packages in
 * `npm test`): then packing needs no second build, which takes minutes on two cores.
 */
function distIsFresh(): boolean {
  const configuration = ['tsdown.config.ts', 'tsconfig.build.json', 'tsconfig.base.json'].map((file) => statSync(join(repoRoot, file)).mtimeMs)
  return publishablePackages().every(({ directory }) => {
    const built = mtimes(join(directory, 'dist'))
    if (built.length === 0) return false
    const changed = [...mtimes(join(directory, 'src')), statSync(join(directory, 'package.json')).mtimeMs, ...configuration]
    return Math.min(...built) >= Math.max(...changed)
  })
}

/**
 * Installs the packed packages and copies the bench apps into a new temporary directory; returns
 * the directory of the apps (`<dir>/apps/<name>`) and a function that removes it all. `tarballs`
 * reuses a directory of tarballs that scripts/pack.mjs already made.
 *
 * @example
 * const { appsDir, remove } = await installPacked({ log: console.error })
 */
export async function installPacked({ tarballs, log = () => {} }: { tarballs?: string | undefined; log?: (line: string) => void } = {}): Promise<{
  appsDir: string
  remove(): void
}> {
  const dir = mkdtempSync(join(tmpdir(), 'latchkey-bench-size-'))
  const remove = () => rmSync(dir, { recursive: true, force: true })
  try {
    const packed = tarballs
      ? readdirSync(tarballs)
          .filter((file) => file.endsWith('.tgz'))
          .map((file) => join(tarballs, file))
      : await (async () => {
          const build = !distIsFresh()
          if (!build) log('every dist/ is newer than its src/: packing without rebuilding')
          return (await packPackages({ destination: join(dir, 'tarballs'), build, log })).map((item) => item.tarball)
        })()
    type Manifest = { name: string; dependencies?: Record<string, string>; peerDependencies?: Record<string, string> }
    const manifests = new Map<string, { tarball: string; manifest: Manifest }>()
    for (const tarball of packed) {
      const manifest = JSON.parse((await run('tar', ['-xOzf', tarball, 'package/package.json'])).stdout) as Manifest
      manifests.set(manifest.name, { tarball, manifest })
    }
    // What a browser app installs: the packages the apps import and the @latchkey packages they
    // depend on (qr-modal is core's optional peer, which its WalletConnect code may import), not
    // the servers.
    const needed = new Set<string>()
    const add = (name: string) => {
      const found = manifests.get(name)
      if (!found) throw new Error(`no tarball of ${name} in ${tarballs ?? dir}`)
      if (needed.has(name)) return
      needed.add(name)
      for (const dependency of Object.keys({ ...found.manifest.dependencies, ...found.manifest.peerDependencies }))
        if (dependency.startsWith('@latchkey/')) add(dependency)
    }
    for (const name of ['@latchkey/core', '@latchkey/react', '@latchkey/wagmi']) add(name)
    const dependencies: Record<string, string> = Object.fromEntries(
      ['react', 'react-dom', 'viem', 'wagmi', '@tanstack/react-query'].map((name) => [name, workspaceVersion(name)]),
    )
    for (const name of needed) dependencies[name] = `file:${manifests.get(name)!.tarball}`
    writeFileSync(join(dir, 'package.json'), `${JSON.stringify({ name: 'latchkey-bench-size', private: true, type: 'module', dependencies }, null, 2)}\n`)
    log(`installing ${[...needed].join(', ')} (packed) with react, react-dom, viem, wagmi and @tanstack/react-query into ${dir}`)
    // Offline first: the workspace's install has put every registry package in npm's cache.
    await run('npm', ['install', '--prefer-offline', '--no-audit', '--no-fund', '--ignore-scripts', '--loglevel=error'], {
      cwd: dir,
      maxBuffer: 64 * 1024 * 1024,
    })
    const apps = join(dir, 'apps')
    mkdirSync(apps)
    cpSync(join(import.meta.dirname, 'apps'), apps, { recursive: true })
    if (!existsSync(join(dir, 'node_modules', '@latchkey', 'react', 'dist', 'index.js')))
      throw new Error(`@latchkey/react was installed without dist/ in ${dir}`)
    return { appsDir: apps, remove }
  } catch (error) {
    remove()
    throw error
  }
}
