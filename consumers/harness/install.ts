import { execFileSync } from 'node:child_process'
import { existsSync } from 'node:fs'
import { cp, mkdtemp, readFile, realpath, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { dirname, join, parse } from 'node:path'
import { nativeModules } from './native.js'
import { consumerEnv, repositoryRoot, runOrThrow } from './process.js'

/** The apps, copied into the consumer directory as subfolders. */
export const appsDir = join(import.meta.dirname, '..', 'apps')

/** The current major of Next.js the App Router consumer is built with. */
export const nextVersion = '^16'

/** The wagmi majors the wagmi consumer is built with: the workspace's (3) in the shared install, and 2 in its own. */
export const wagmi2Version = '^2'
/** ethers, beside wagmi in the wagmi consumer. */
export const ethersVersion = '^6'

export type InstallConsumersParameters = {
  /** Paths of the packed `.tgz` files of the Latchkey packages. */
  tarballs: readonly string[]
}

/**
 * Makes the consumer directory: a fresh folder under the system's temporary directory (outside
 * the repository, so Node's resolution cannot walk up into the workspace's node_modules), the
 * apps of `consumers/apps` as subfolders, and one package.json with every dependency they share:
 * the packed tarballs, and React, viem and the tools from the npm registry, at the versions the
 * workspace uses. Then `npm install`, once, without install scripts: `startNativeBuild`
 * builds the native modules in the background.
 *
 * @example
 * const dir = await installConsumers({ tarballs: ['/tmp/pack/latchkey-core-0.1.0.tgz', …] })
 */
export async function installConsumers({ tarballs }: InstallConsumersParameters): Promise<string> {
  const dir = await mkdtemp(join(await realpath(tmpdir()), 'latchkey-consumers-'))
  assertIsolated(dir)
  await cp(appsDir, dir, { recursive: true })

  const dependencies: Record<string, string> = {}
  for (const tarball of tarballs) dependencies[packageNameOf(tarball)] = `file:${tarball}`
  for (const [name, version] of Object.entries(await registryDependencies())) dependencies[name] = version
  const manifest = {
    name: 'latchkey-consumers',
    private: true,
    type: 'module',
    dependencies,
    // npm runs only the install scripts listed here: the SQLite binding of the relay, kms and backend, built from source.
    allowScripts: Object.fromEntries(nativeModules.map((name) => [name, true])),
  }
  await writeFile(join(dir, 'package.json'), `${JSON.stringify(manifest, null, 2)}\n`)
  // Scripts run later, in the background (startNativeBuild).
  await runOrThrow('npm', ['install', '--ignore-scripts', '--prefer-offline', '--no-audit', '--no-fund', '--loglevel=error'], { cwd: dir, env: consumerEnv() })
  return dir
}

/** The package a tarball holds, read from its own package.json. */
function packageNameOf(tarball: string): string {
  const manifest = execFileSync('tar', ['-xOzf', tarball, 'package/package.json'], { encoding: 'utf8' })
  return (JSON.parse(manifest) as { name: string }).name
}

/** React, viem and the build tools, in the versions the workspace develops against; Next.js in its current major. */
async function registryDependencies(): Promise<Record<string, string>> {
  const readManifest = async (path: string) =>
    JSON.parse(await readFile(join(repositoryRoot, path), 'utf8')) as { dependencies?: Record<string, string>; devDependencies?: Record<string, string> }
  const root = await readManifest('package.json')
  const core = await readManifest('packages/core/package.json')
  const wagmi = await readManifest('packages/wagmi/package.json')
  const fromRoot = ['react', 'react-dom', 'vite', '@vitejs/plugin-react', 'typescript', '@types/react', '@types/react-dom', '@types/node']
  const versions: Record<string, string> = {
    viem: core.dependencies!['viem']!,
    next: nextVersion,
    wagmi: wagmi.devDependencies!['wagmi']!,
    '@tanstack/react-query': wagmi.devDependencies!['@tanstack/react-query']!,
    ethers: ethersVersion,
  }
  for (const name of fromRoot) versions[name] = root.devDependencies![name]!
  return versions
}

/** Throws if a folder above `dir` holds a node_modules that Node's resolution would find. */
function assertIsolated(dir: string) {
  if (dir.startsWith(repositoryRoot)) throw new Error(`the consumer directory ${dir} is inside the repository ${repositoryRoot}`)
  for (let folder = dirname(dir); ; folder = dirname(folder)) {
    if (existsSync(join(folder, 'node_modules')))
      throw new Error(`${join(folder, 'node_modules')} exists above the consumer directory ${dir}: Node would resolve packages from it`)
    if (folder === parse(folder).root) break
  }
}

/**
 * The wagmi app a second time, on wagmi 2: `<dir>/wagmi2`, a copy of `<dir>/wagmi` with a
 * package.json and node_modules of its own (the same tarballs and registry packages as the shared
 * install, wagmi 2 in place of 3). Node's resolution stops at the nearer node_modules, so the app,
 * @latchkey/wagmi and wagmi itself all resolve inside it.
 *
 * @example
 * const app = await installWagmi2(dir) // `${dir}/wagmi2`
 */
export async function installWagmi2(dir: string): Promise<string> {
  const app = await prepareWagmiApp(dir, 'wagmi2', wagmi2Version)
  await runOrThrow('npm', ['install', '--ignore-scripts', '--prefer-offline', '--no-audit', '--no-fund', '--loglevel=error'], { cwd: app, env: consumerEnv() })
  return app
}

/**
 * `<dir>/<folder>`: a copy of the wagmi app with a package.json of its own, the shared install's
 * dependencies with `wagmi` at `wagmiVersion` (not installed yet).
 *
 * @example
 * const app = await prepareWagmiApp(dir, 'wagmi1', '^1') // then `npm install` in it
 */
export async function prepareWagmiApp(dir: string, folder: string, wagmiVersion: string): Promise<string> {
  const app = join(dir, folder)
  await cp(join(appsDir, 'wagmi'), app, { recursive: true })
  const shared = JSON.parse(await readFile(join(dir, 'package.json'), 'utf8')) as { dependencies: Record<string, string> }
  const { next: _next, ...dependencies } = shared.dependencies
  const manifest = { name: `latchkey-consumer-${folder}`, private: true, type: 'module', dependencies: { ...dependencies, wagmi: wagmiVersion } }
  await writeFile(join(app, 'package.json'), `${JSON.stringify(manifest, null, 2)}\n`)
  return app
}
