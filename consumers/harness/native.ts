import { spawn } from 'node:child_process'
import { existsSync, readFileSync, realpathSync, watch } from 'node:fs'
import { readFile, rename, writeFile } from 'node:fs/promises'
import { dirname, join } from 'node:path'
import { binPath, consumerEnv } from './process.js'

/**
 * Native modules of the packed packages that npm builds from source on install (this machine
 * reaches no prebuilt binaries): the SQLite binding of the relay, kms and backend.
 */
export const nativeModules = ['better-sqlite3'] as const

/** Written into the consumer directory when the native build ends: `{ code, output }`. */
const markerName = '.latchkey-native-build.json'

/**
 * Builds the native modules of an install made with `--ignore-scripts` (`npm rebuild`), in the
 * background: the compile (about a minute of one core) overlaps the app builds and tests instead
 * of holding up the install. {@link nativeModulesReady} waits for it in any test process.
 *
 * @example
 * const build = startNativeBuild(dir)
 * // … later, in a test: await nativeModulesReady(dir)
 * await build.stop()
 */
export function startNativeBuild(dir: string): { stop(): Promise<void> } {
  const installed = nativeModules.filter((name) => existsSync(join(dir, 'node_modules', name, 'package.json')))
  const child = spawn('npm', ['rebuild', ...installed, '--loglevel=error'], { cwd: dir, env: consumerEnv(), stdio: ['ignore', 'pipe', 'pipe'] })
  let output = ''
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => (output += chunk))
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (output += chunk))
  const finished = new Promise<void>((resolve) => {
    const finish = async (code: number | null, reason: string) => {
      // Written whole, then renamed: a reader never sees half of it.
      await writeFile(join(dir, `${markerName}.tmp`), JSON.stringify({ code, output: `${output}${reason}` }))
      await rename(join(dir, `${markerName}.tmp`), join(dir, markerName))
      resolve()
    }
    child.once('error', (error) => void finish(null, `\nnpm could not run: ${error.message}`))
    child.once('close', (code, signal) => void finish(code, signal ? `\nnpm rebuild ended by ${signal}` : ''))
  })
  return {
    async stop() {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM')
      await finished
    },
  }
}

/**
 * Whether the native build of the consumer directory has ended (successfully or not).
 *
 * @example
 * if (!nativeBuildEnded(dir)) startNativeBuild(dir)
 */
export function nativeBuildEnded(dir: string): boolean {
  return existsSync(join(dir, markerName))
}

/**
 * Resolves once the native modules of the consumer directory are built; throws with npm's
 * output if the build failed.
 *
 * @example
 * await nativeModulesReady(dir)
 */
export async function nativeModulesReady(dir: string): Promise<void> {
  const marker = join(dir, markerName)
  if (!existsSync(marker))
    await new Promise<void>((resolve, reject) => {
      const watcher = watch(dir, () => {
        if (!existsSync(marker)) return
        watcher.close()
        resolve()
      })
      watcher.once('error', reject)
      // It may have appeared between the first look and the watch.
      if (existsSync(marker)) {
        watcher.close()
        resolve()
      }
    })
  const { code, output } = JSON.parse(await readFile(marker, 'utf8')) as { code: number | null; output: string }
  if (code !== 0) throw new Error(`npm rebuild of ${nativeModules.join(', ')} in ${dir} failed (exit ${code}):\n${output}`)
}

/**
 * Whether an installed bin's package depends on a native module, so that starting it has to wait
 * for {@link nativeModulesReady}.
 *
 * @example
 * needsNativeModules(dir, 'latchkey-kms') // true
 */
export function needsNativeModules(dir: string, name: string): boolean {
  for (let folder = dirname(realpathSync(binPath(dir, name))); folder !== dirname(folder); folder = dirname(folder)) {
    const manifest = join(folder, 'package.json')
    if (!existsSync(manifest)) continue
    const { dependencies = {} } = JSON.parse(readFileSync(manifest, 'utf8')) as { dependencies?: Record<string, string> }
    return nativeModules.some((module) => module in dependencies)
  }
  return false
}
