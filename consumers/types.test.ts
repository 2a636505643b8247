import { readFile, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { expect, inject, test } from 'vitest'
import { runInstalledBin } from './harness/bins.js'

// The published declarations of the browser packages as a browser app's compiler reads them:
// `skipLibCheck: false` (every .d.ts is checked, not only what the app uses) and no @types/node
// (`types: []`, apps/types/tsconfig.json). A declaration that names a Node type (`NodeJS.…`,
// `Buffer`) fails here.

const dir = inject('consumers')

/** The packages an app loads in a browser; the others (kms, relay, server, service) are Node servers. */
const browserPackages = [
  '@latchkey/constants',
  '@latchkey/core',
  '@latchkey/embedded',
  '@latchkey/qr-modal',
  '@latchkey/react',
  '@latchkey/wagmi',
  '@latchkey/walletconnect',
]

type Manifest = { exports?: Record<string, string | Record<string, string>> }

/** Every JavaScript entry point of an installed package, as an import specifier. */
async function entryPoints(name: string): Promise<string[]> {
  const manifest = JSON.parse(await readFile(join(dir, 'node_modules', name, 'package.json'), 'utf8')) as Manifest
  return Object.entries(manifest.exports ?? {})
    .filter(([, target]) => typeof target !== 'string' && target['types'] !== undefined)
    .map(([subpath]) => (subpath === '.' ? name : `${name}/${subpath.slice(2)}`))
}

test('behavior: every entry point of every browser package type-checks with skipLibCheck false and without @types/node', async () => {
  const specifiers = (await Promise.all(browserPackages.map(entryPoints))).flat()
  expect(specifiers).toEqual(expect.arrayContaining(browserPackages))
  const source = specifiers.map((specifier, index) => `export type * as entry${index} from '${specifier}'\n`).join('')
  await writeFile(join(dir, 'types', 'entries.ts'), source)

  const files = await runInstalledBin({ dir, name: 'tsc', args: ['--listFilesOnly', '-p', 'tsconfig.json'], cwd: 'types' })
  expect(files.code, files.output).toBe(0)
  // What makes the check mean something: nothing pulled the Node types in.
  expect(files.output.split('\n').filter((file) => file.includes('/@types/node/'))).toEqual([])

  const tsc = await runInstalledBin({ dir, name: 'tsc', args: ['--noEmit', '-p', 'tsconfig.json'], cwd: 'types' })
  const errors = tsc.output.split('\n').filter((line) => / error TS\d+:/.test(line))
  // Ours and the app's: none. Third-party declarations that fail this strict setting on their own
  // (wagmi's against the installed @tanstack/react-query) are theirs to fix, and not what this checks.
  expect(errors.filter((line) => !line.startsWith('../node_modules/') || line.startsWith('../node_modules/@latchkey/'))).toEqual([])
})
