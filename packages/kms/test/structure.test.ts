import { readdirSync, readFileSync } from 'node:fs'
import { dirname, join, relative, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { expect, test } from 'vitest'

// The kms's modules form no import cycle, type-only imports included: each module can be read
// (and changed) knowing only what it imports.

const SRC = fileURLToPath(new URL('../src', import.meta.url))

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
  const graph = new Map(files.map((file) => [file, importsOf(file).filter((target) => files.includes(target))]))
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
  for (const file of files) if (!state.has(file)) visit(file)
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
