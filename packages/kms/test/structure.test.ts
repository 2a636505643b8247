import { readdirSync, readFileSync } from 'node:fs'
import { dirname, join, relative, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { expect, test } from 'vitest'

// The kms's modules form no import cycle, type-only imports included: each module can be read
// (and changed) knowing only what it imports. And the kms is one folder per resource, each holding
// its activities and queries: the folders depend on one another without a cycle, on the shared
// modules below them, never on the layer above (resources.ts, which joins them, and the HTTP side).

const SRC = fileURLToPath(new URL('../src', import.meta.url))

/** The resource folders (issue 14 §6), plus `signing` (sign_*) and `activities` (the table types, get_activity, list_activities). */
const RESOURCES = ['organizations', 'users', 'wallets', 'privateKeys', 'sessions', 'auth', 'exportImport', 'policies', 'signing', 'activities', 'grants', 'mfa']
/** The layer above the folders: what joins them and serves them over HTTP. */
const ABOVE = ['resources.ts', 'app.ts', 'service.ts', 'cli.ts', 'index.ts', 'routes/', 'http/', 'frames/']

function sources(directory: string): string[] {
  return readdirSync(directory, { withFileTypes: true }).flatMap((entry) => {
    const path = join(directory, entry.name)
    if (entry.isDirectory()) return sources(path)
    return /\.tsx?$/.test(entry.name) && !entry.name.includes('.test.') ? [path] : []
  })
}

/** Relative imports and re-exports of a module (static and dynamic), resolved to source files. */
function importsOf(path: string): string[] {
  const text = readFileSync(path, 'utf8')
  const specifiers = [...text.matchAll(/(?:^|\n)\s*(?:import|export)\b[^'"]*?from\s*['"](\.[^'"]+)['"]|import\(\s*['"](\.[^'"]+)['"]\s*\)/g)].map(
    (match) => match[1] ?? match[2]!,
  )
  return specifiers.map((specifier) => resolve(dirname(path), specifier).replace(/\.js$/, '.ts'))
}

/** Every cycle found by a depth-first walk, each as the list of files around it. */
function findCycles(files: readonly string[]): string[][] {
  return cyclesOf(new Map(files.map((file) => [file, importsOf(file).filter((target) => files.includes(target))])))
}

/** The top folder of `file` under `root` ('' for a module directly in it). */
const folderOf = (root: string, file: string) => {
  const parts = relative(root, file).split('/')
  return parts.length > 1 ? parts[0]! : ''
}

/** Cycles between the folders under `root` (a file importing one in another folder is an edge between the folders). */
function findFolderCycles(root: string, folders: readonly string[]): string[][] {
  const files = sources(root)
  const graph = new Map<string, string[]>(folders.map((folder) => [folder, []]))
  for (const file of files) {
    const from = folderOf(root, file)
    if (!folders.includes(from)) continue
    for (const target of importsOf(file)) {
      const to = folderOf(root, target)
      if (to !== from && folders.includes(to) && !graph.get(from)!.includes(to)) graph.get(from)!.push(to)
    }
  }
  return cyclesOf(graph)
}

function cyclesOf(graph: ReadonlyMap<string, readonly string[]>): string[][] {
  const state = new Map<string, 'open' | 'done'>()
  const stack: string[] = []
  const cycles: string[][] = []
  const visit = (file: string) => {
    state.set(file, 'open')
    stack.push(file)
    for (const next of graph.get(file) ?? []) {
      if (state.get(next) === 'open') cycles.push(stack.slice(stack.indexOf(next)).concat(next))
      else if (!state.has(next)) visit(next)
    }
    stack.pop()
    state.set(file, 'done')
  }
  for (const file of graph.keys()) if (!state.has(file)) visit(file)
  return cycles
}

test('the kms source has no import cycle', () => {
  const files = sources(SRC)
  expect(files.length).toBeGreaterThan(20)
  expect(findCycles(files).map((cycle) => cycle.map((file) => relative(SRC, file)).join(' → '))).toEqual([])
})

test('the check finds a cycle when there is one', () => {
  // Two modules of this very suite's fixture shape: a → b → a, written as the walk reads them.
  const fixture = fileURLToPath(new URL('./fixtures/cycle', import.meta.url))
  expect(findCycles(sources(fixture)).map((cycle) => cycle.map((file) => relative(fixture, file)))).toEqual([['a.ts', 'b.ts', 'a.ts']])
})

test('the kms is one folder per resource, the folders without a cycle between them', () => {
  for (const folder of RESOURCES) {
    const names = readdirSync(join(SRC, folder))
    expect(names.filter((name) => name === 'activities.ts' || name === 'queries.ts').length, folder).toBeGreaterThan(0)
  }
  expect(findFolderCycles(SRC, RESOURCES).map((cycle) => cycle.join(' → '))).toEqual([])
})

test('a resource folder never imports the layer above it, and only resources.ts imports the folders’ tables', () => {
  const files = sources(SRC)
  const wrong: string[] = []
  for (const file of files) {
    const inFolder = RESOURCES.includes(folderOf(SRC, file))
    for (const target of importsOf(file)) {
      const name = relative(SRC, target)
      if (inFolder && ABOVE.some((above) => name === above || name.startsWith(above))) wrong.push(`${relative(SRC, file)} imports ${name}`)
      const table = RESOURCES.includes(folderOf(SRC, target)) && /\/(activities|queries)\.ts$/.test(name)
      if (table && !inFolder && relative(SRC, file) !== 'resources.ts') wrong.push(`${relative(SRC, file)} imports ${name}`)
    }
  }
  expect(wrong).toEqual([])
})

test('the folder check finds a cycle between folders that no file cycle shows', () => {
  // wallets/activities → signing/keys, signing/activities → wallets/keys: four files, no file cycle.
  const fixture = fileURLToPath(new URL('./fixtures/folders', import.meta.url))
  expect(findCycles(sources(fixture))).toEqual([])
  expect(findFolderCycles(fixture, ['wallets', 'signing'])).toEqual([['wallets', 'signing', 'wallets']])
})
