import { existsSync, readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { describe, expect, test } from 'vitest'

// What every package's package.json and README promise, read from the files (no build): one
// version, internal dependencies on it, a licence, the exports convention the build relies on, a
// snapshot of every entry point's names, and a README with the four sections users look for.
// The packed tarballs are checked by `npm run test:packages` (test/packages/).

type ExportValue = string | Record<string, string>
type PackageJson = {
  name: string
  version: string
  private?: boolean
  license?: string
  type?: string
  sideEffects?: boolean | string[]
  exports?: Record<string, ExportValue>
  bin?: string | Record<string, string>
  files?: string[]
  scripts?: Record<string, string>
  dependencies?: Record<string, string>
  devDependencies?: Record<string, string>
  peerDependencies?: Record<string, string>
  optionalDependencies?: Record<string, string>
  publishConfig?: Record<string, unknown>
}

const repoRoot = join(import.meta.dirname, '..')
const read = (file: string) => readFileSync(join(repoRoot, file), 'utf8')
const directories = readdirSync(join(repoRoot, 'packages'), { withFileTypes: true })
  .filter((entry) => entry.isDirectory() && existsSync(join(repoRoot, 'packages', entry.name, 'package.json')))
  .map((entry) => `packages/${entry.name}`)
  .sort()
const manifests = directories.map((directory) => ({ directory, pkg: JSON.parse(read(`${directory}/package.json`)) as PackageJson }))
const apps = readdirSync(join(repoRoot, 'apps'), { withFileTypes: true })
  .filter((entry) => entry.isDirectory() && existsSync(join(repoRoot, 'apps', entry.name, 'package.json')))
  .map((entry) => ({ directory: `apps/${entry.name}`, pkg: JSON.parse(read(`apps/${entry.name}/package.json`)) as PackageJson }))
const internalNames = new Set(manifests.map(({ pkg }) => pkg.name))
const version = manifests[0]!.pkg.version

const parseVersion = (text: string) => text.split('.').map(Number) as [number, number, number]
const compareVersions = (a: string, b: string) => {
  const [x, y] = [parseVersion(a), parseVersion(b)]
  return x[0] - y[0] || x[1] - y[1] || x[2] - y[2]
}

/** Whether an internal peer range (`>=A.B.C <N`, see README "Build and release") admits `version`. */
function peerRangeAdmits(range: string, candidate: string): boolean {
  const match = /^>=(\d+\.\d+\.\d+) <(\d+)$/.exec(range)
  return match !== null && compareVersions(candidate, match[1]!) >= 0 && parseVersion(candidate)[0] < Number(match[2])
}

test('default: every package is a library workspace with a name under @latchkey/', () => {
  expect(manifests.map(({ directory, pkg }) => `${directory} ${pkg.name}`)).toEqual(
    directories.map((directory) => `${directory} @latchkey/${directory.replace('packages/', '')}`),
  )
})

test('default: one version across the packages', () => {
  expect(new Set(manifests.map(({ pkg }) => pkg.version))).toEqual(new Set([version]))
  expect(version).toMatch(/^\d+\.\d+\.\d+$/)
})

test('default: internal dependencies are on exactly that version (peer dependencies: a range from it)', () => {
  const wrong: string[] = []
  for (const { directory, pkg } of [...manifests, ...apps]) {
    for (const field of ['dependencies', 'devDependencies', 'optionalDependencies'] as const)
      for (const [name, range] of Object.entries(pkg[field] ?? {}))
        if (internalNames.has(name) && range !== version) wrong.push(`${directory} ${field} ${name}@${range}`)
    // A peer range on the exact version would make changesets release every package as a major.
    for (const [name, range] of Object.entries(pkg.peerDependencies ?? {}))
      if (internalNames.has(name) && !peerRangeAdmits(range, version)) wrong.push(`${directory} peerDependencies ${name}@${range}`)
  }
  expect(wrong).toEqual([])
})

test('default: changesets releases every package together (one fixed group)', () => {
  const config = JSON.parse(read('.changeset/config.json')) as { fixed: string[][]; ignore: string[]; access: string }
  expect(config.fixed).toEqual([manifests.map(({ pkg }) => pkg.name).sort()])
  expect(config.ignore).toEqual([])
  expect(config.access).toBe('public')
})

test('default: the root has a version and one install of every dependency, so `npm ls` and `npm sbom` succeed', () => {
  const root = JSON.parse(read('package.json')) as PackageJson & { overrides?: Record<string, string> }
  // npm sbom refuses a root without a version; the root is private and never published.
  expect(root).toMatchObject({ private: true, version: '0.0.0' })
  // viem 2.31 (under @walletconnect/utils) pins abitype 1.0.8, whose optional zod peer is ^3: the
  // workspace's zod 4 made it an invalid tree. abitype 1.2 takes zod 3 or 4.
  expect(root.overrides).toEqual({ abitype: '^1.2.3' })
})

describe.each(manifests)('$pkg.name', ({ directory, pkg }) => {
  test('default: published with provenance (the release runs where npm can attest it)', () => {
    if (pkg.private) return expect(pkg.publishConfig).toBeUndefined()
    expect(pkg.publishConfig).toEqual({ provenance: true })
  })

  test('default: MIT licence, ES modules, side effects declared', () => {
    expect(pkg.license).toBe('MIT')
    expect(read(`${directory}/LICENSE`), 'the MIT text ships in the tarball').toBe(read('LICENSE'))
    expect(pkg.type).toBe('module')
    expect(pkg.sideEffects === false || Array.isArray(pkg.sideEffects), 'sideEffects is false or a list').toBe(true)
  })

  test('default: every export lists source, then types (JavaScript only), then default, on mirrored paths', () => {
    const wrong: string[] = []
    for (const [subpath, value] of Object.entries(pkg.exports ?? {})) {
      if (typeof value === 'string') {
        wrong.push(`${subpath}: a plain path; give it source and default conditions`)
        continue
      }
      const source = value.source ?? ''
      const javascript = /\.tsx?$/.test(source)
      const stem = source.replace(/^\.\/src\//, '').replace(/\.tsx?$/, '')
      const expected = javascript
        ? { source, types: `./dist/${stem}.d.ts`, default: `./dist/${stem}.js` }
        : { source, default: source.replace(/^\.\/src\//, './dist/') }
      if (!source.startsWith('./src/') || !existsSync(join(repoRoot, directory, source))) wrong.push(`${subpath}: source ${source} is not a file under src/`)
      if (JSON.stringify(Object.entries(value)) !== JSON.stringify(Object.entries(expected)))
        wrong.push(`${subpath}: ${JSON.stringify(value)}, expected ${JSON.stringify(expected)}`)
    }
    expect(wrong).toEqual([])
  })

  test('default: every JavaScript entry point has a snapshot of its export names beside it', () => {
    const missing: string[] = []
    for (const [subpath, value] of Object.entries(pkg.exports ?? {})) {
      const source = typeof value === 'string' ? '' : (value.source ?? '')
      if (!/\.tsx?$/.test(source)) continue
      const testFile = join(repoRoot, directory, source.replace(/\.tsx?$/, '.test.ts'))
      const call = `Object.keys(await import('./${source
        .split('/')
        .at(-1)!
        .replace(/\.tsx?$/, '.js')}')).sort()).toMatchInlineSnapshot(\``
      if (!existsSync(testFile) || !readFileSync(testFile, 'utf8').includes(call))
        missing.push(`${subpath}: ${testFile.slice(repoRoot.length + 1)} with ${call}`)
    }
    expect(missing).toEqual([])
  })

  test('default: build and prepack scripts (every package exports ./dist, packed or not); publishable packages ship dist/ and their sources without tests', () => {
    expect(pkg.scripts?.['build']).toBe('tsdown --config ../../tsdown.config.ts')
    expect(pkg.scripts?.['prepack']).toBe('npm run build')
    if (pkg.private) return
    expect(pkg.files).toEqual(expect.arrayContaining(['dist', 'src', '!src/**/*.test.*', '!src/**/test', '!src/**/fixtures', '!**/.latchkey']))
  })

  test('default: the README has install, use, options and errors sections', () => {
    const headings = read(`${directory}/README.md`)
      .split('\n')
      .filter((line) => /^##\s/.test(line))
      .map((line) => line.replace(/^##\s+/, ''))
    const missing = ['Install', 'Use', 'Options', 'Errors'].filter((section) => !headings.some((heading) => heading.startsWith(section)))
    expect(missing).toEqual([])
    expect(read(`${directory}/README.md`).startsWith(`# ${pkg.name}\n`)).toBe(true)
  })
})

test('default: the root README tells how packages are built and released', () => {
  const readme = read('README.md')
  expect(readme).toMatch(/^## Build and release$/m)
})
