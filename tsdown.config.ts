import { existsSync, readdirSync, readFileSync } from 'node:fs'
import { dirname, join, relative, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { defineConfig, type UserConfig } from 'tsdown'

// One build for every library package, derived from each package.json: an `exports` or `bin`
// target `./dist/X.js` is built from `./src/X.ts` (or `.tsx`), so a new entry point needs no change
// here. Run from the repository root it builds every package under packages/; run from a package
// directory (its `build` and `prepack` scripts) it builds that package only.

const repoRoot = dirname(fileURLToPath(import.meta.url))

type PackageJson = {
  name: string
  exports?: Record<string, string | Record<string, string>>
  bin?: string | Record<string, string>
  dependencies?: Record<string, string>
  peerDependencies?: Record<string, string>
  optionalDependencies?: Record<string, string>
}

const readPackage = (dir: string): PackageJson => JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8'))

/** Every package directory under packages/ (the library workspaces), sorted. */
export function libraryPackageDirectories(): string[] {
  const root = join(repoRoot, 'packages')
  return readdirSync(root, { withFileTypes: true })
    .filter((entry) => entry.isDirectory() && existsSync(join(root, entry.name, 'package.json')))
    .map((entry) => join(root, entry.name))
    .sort()
}

const DIST_JS = /^\.\/dist\/(.+)\.js$/

/** The source file of each JavaScript target in `exports` and `bin`, relative to the package. */
export function packageEntries(dir: string, pkg: PackageJson = readPackage(dir)): string[] {
  const entries = new Set<string>()
  const add = (target: string, declaredSource?: string) => {
    const stem = DIST_JS.exec(target)?.[1]
    if (!stem) return
    const source = [`src/${stem}.ts`, `src/${stem}.tsx`].find((file) => existsSync(join(dir, file)))
    if (!source) throw new Error(`${pkg.name}: ${target} has no source file src/${stem}.ts(x)`)
    if (declaredSource !== undefined && declaredSource !== `./${source}`)
      throw new Error(`${pkg.name}: the source condition ${declaredSource} does not match ${target} (expected ./${source})`)
    entries.add(source)
  }
  for (const value of Object.values(pkg.exports ?? {})) {
    if (typeof value === 'string') add(value)
    else if (value.default) add(value.default, value.source)
  }
  const bins = typeof pkg.bin === 'string' ? [pkg.bin] : Object.values(pkg.bin ?? {})
  for (const target of bins) add(target)
  return [...entries].sort()
}

const isTestPath = (path: string) => /(^|\/)(test|tests|fixtures|__snapshots__)(\/|$)|\.test\.[cm]?[jt]sx?$/.test(path)

/**
 * Files under src/ that the built modules load at run time but the bundler does not emit:
 * stylesheets imported for their side effect, JSON data, and plain JavaScript started by URL
 * (the kms's PostgreSQL worker). They are copied to dist/ at the same relative path.
 */
function runtimeAssets(dir: string): string[] {
  const src = join(dir, 'src')
  return (readdirSync(src, { recursive: true, encoding: 'utf8' }) as string[])
    .map((file) => file.split('\\').join('/'))
    .filter((file) => /\.(css|json|js)$/.test(file) && !isTestPath(file))
    .sort()
}

/** The tsdown options of one package. */
export function packageConfig(dir: string): UserConfig {
  const pkg = readPackage(dir)
  const runtimeDependencies = [
    ...Object.keys(pkg.dependencies ?? {}),
    ...Object.keys(pkg.peerDependencies ?? {}),
    ...Object.keys(pkg.optionalDependencies ?? {}),
  ]
  const assets = runtimeAssets(dir)
  return {
    name: pkg.name,
    cwd: dir,
    entry: packageEntries(dir, pkg),
    // One output module per source module: apps tree-shake the package as they do its source, and
    // each React file keeps its own 'use client' directive.
    unbundle: true,
    root: 'src',
    outDir: 'dist',
    format: 'esm',
    platform: 'neutral',
    // Node 20.19 and the browsers Vite 8 targets both run ES2022; nothing is downlevelled.
    target: 'es2022',
    fixedExtension: false,
    hash: false,
    sourcemap: true,
    minify: false,
    dts: { sourcemap: true, tsconfig: join(repoRoot, 'tsconfig.build.json') },
    deps: {
      neverBundle: [...runtimeDependencies.map((name) => new RegExp(`^${name.replace(/[/.]/g, '\\$&')}(/|$)`)), /\.(css|json)$/, /^node:/],
      // Nothing from node_modules is copied into dist: a dependency stays one shared copy in the
      // app, and an import of a package the package.json does not declare fails the build.
      onlyBundle: [],
    },
    copy: assets.map((file) => ({ from: join(dir, 'src', file), to: dirname(join(dir, 'dist', file)) })),
    report: false,
    // The declaration pass dominates the build time by design (it runs the TypeScript checker).
    checks: { pluginTimings: false },
    logLevel: 'warn',
    failOnWarn: true,
  }
}

/** The package directory a command was started in, or undefined at the repository root. */
function packageDirectoryOf(cwd: string): string | undefined {
  const dir = resolve(cwd)
  return libraryPackageDirectories().find((candidate) => candidate === dir)
}

export default defineConfig(() => {
  const single = packageDirectoryOf(process.cwd())
  const dirs = single ? [single] : libraryPackageDirectories()
  if (dirs.length === 0) throw new Error(`no packages under ${relative(process.cwd(), join(repoRoot, 'packages'))}`)
  return dirs.map(packageConfig)
})
