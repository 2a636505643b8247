import { readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { pathToFileURL } from 'node:url'
import ts from 'typescript'

// Compiles the frames' browser code (src/frames/browser/*.ts) ahead of time into plain ES
// modules in frames/, which the kms serves as they are: no bundler and no compiler at run time.
// Run `npm run build:frames -w @latchkey/kms` after changing the browser code; a unit test fails
// while frames/ is stale.

export const browserSources = new URL('./browser/', import.meta.url)
export const compiledFrames = new URL('../../frames/', import.meta.url)

const header = (name: string) => `// Generated from src/frames/browser/${name}.ts by \`npm run build:frames -w @latchkey/kms\`. Do not edit.\n`

/** The compiled modules, by file name (`auth.js`, …). Types are erased; nothing else changes. */
export function compileFrames(): Map<string, string> {
  const compiled = new Map<string, string>()
  for (const file of readdirSync(browserSources)
    .filter((name) => name.endsWith('.ts'))
    .sort()) {
    const source = readFileSync(new URL(file, browserSources), 'utf8')
    const { outputText } = ts.transpileModule(source, {
      fileName: file,
      compilerOptions: { target: ts.ScriptTarget.ES2022, module: ts.ModuleKind.ESNext, verbatimModuleSyntax: true, useDefineForClassFields: true },
    })
    const name = file.replace(/\.ts$/, '')
    compiled.set(`${name}.js`, header(name) + outputText)
  }
  return compiled
}

/** Writes frames/*.js afresh. */
export function writeFrames(): string[] {
  for (const file of readdirSync(compiledFrames).filter((name) => name.endsWith('.js'))) rmSync(new URL(file, compiledFrames))
  const compiled = compileFrames()
  for (const [file, text] of compiled) writeFileSync(new URL(file, compiledFrames), text)
  return [...compiled.keys()]
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) console.log(`frames/: ${writeFrames().join(', ')}`)
