import { cp, mkdtemp, readdir, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { TestProject } from 'vitest/node'
import { packPackages } from '../../scripts/pack.mjs'
import { appsDir, installConsumers } from './install.js'
import { nativeBuildEnded, startNativeBuild } from './native.js'

declare module 'vitest' {
  export interface ProvidedContext {
    /** The consumer directory: the packed packages installed from their tarballs, the apps as subfolders. */
    consumers: string
  }
}

/**
 * Packs every publishable package (scripts/pack.mjs: one build, then `npm pack`) and installs the
 * tarballs once, into the directory all consumer tests share. `LATCHKEY_CONSUMER_TARBALLS` names
 * a directory of tarballs packed earlier instead.
 */
export default async function setup(project: TestProject) {
  const reused = process.env['LATCHKEY_CONSUMERS_DIR']
  if (reused) {
    // Debugging: the install of an earlier run (kept with LATCHKEY_KEEP_CONSUMERS), with the apps copied afresh.
    await cp(appsDir, reused, { recursive: true })
    const nativeBuild = nativeBuildEnded(reused) ? undefined : startNativeBuild(reused)
    project.provide('consumers', reused)
    return () => nativeBuild?.stop()
  }
  const started = performance.now()
  const packedEarlier = process.env['LATCHKEY_CONSUMER_TARBALLS']
  const packDirectory = packedEarlier ?? (await mkdtemp(join(tmpdir(), 'latchkey-consumer-packs-')))
  const tarballs = packedEarlier
    ? (await readdir(packedEarlier)).filter((name) => name.endsWith('.tgz')).map((name) => join(packedEarlier, name))
    : (await packPackages({ destination: packDirectory })).map((packed) => packed.tarball)
  const packed = performance.now()
  const dir = await installConsumers({ tarballs })
  const installed = performance.now()
  console.log(`consumers: packed ${tarballs.length} packages in ${seconds(packed - started)}, installed them in ${dir} in ${seconds(installed - packed)}`)
  const nativeBuild = startNativeBuild(dir)
  project.provide('consumers', dir)
  return async () => {
    await nativeBuild.stop()
    if (!packedEarlier) await rm(packDirectory, { recursive: true, force: true })
    if (process.env['LATCHKEY_KEEP_CONSUMERS']) return console.log(`consumers: kept ${dir}`)
    await rm(dir, { recursive: true, force: true })
  }
}

const seconds = (ms: number) => `${(ms / 1000).toFixed(1)} s`
