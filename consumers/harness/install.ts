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
  const fromRoot = ['react', 'react-dom', 'vite', '@vitejs/plugin-react', 'typescript', '@types/react', '@types/react-dom', '@types/node']
  const versions: Record<string, string> = { viem: core.dependencies!['viem']!, next: nextVersion }
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
