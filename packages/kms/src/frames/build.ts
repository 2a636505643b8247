import { readdirSync, rmSync, writeFileSync } from 'node:fs'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { rolldown } from 'rolldown'

// Bundles the frames' browser code (src/frames/browser/*.ts) ahead of time, with its audited
// dependencies (@noble/curves, @noble/hashes, @scure/base, @hpke/core), into plain ES modules in
// frames/, which the kms serves as they are: no bundler and no compiler at run time, and the
// frames' origin loads nothing from anywhere else. Run `npm run build:frames -w @latchkey/kms`
// after changing the browser code or those dependencies; a unit test fails while frames/ is stale.

export const browserSources = new URL('./browser/', import.meta.url)
export const compiledFrames = new URL('../../frames/', import.meta.url)

/** The page scripts (pages.ts links `/assets/{name}.js`); everything else is bundled into them. */
export const FRAME_SCRIPTS = ['auth', 'recovery', 'export', 'import', 'consent'] as const

const header = `// Generated from src/frames/browser/ by \`npm run build:frames -w @latchkey/kms\`. Do not edit.\n`

/** The bundled modules, by file name: one per page script, plus the chunks they share. */
export async function compileFrames(): Promise<Map<string, string>> {
  const bundle = await rolldown({
    input: Object.fromEntries(FRAME_SCRIPTS.map((name) => [name, fileURLToPath(new URL(`${name}.ts`, browserSources))])),
    platform: 'browser',
    // The browser code must not reach into Node or the server's code: only its own files and
    // the packages it imports are bundled; workspace packages (@latchkey/constants) from source.
    resolve: { conditionNames: ['source', 'browser', 'import', 'default'] },
    logLevel: 'warn',
  })
  try {
    const { output } = await bundle.generate({
      format: 'esm',
      entryFileNames: '[name].js',
      chunkFileNames: 'shared-[name].js',
      minify: true,
      comments: { legal: true, annotation: false, jsdoc: false },
    })
    const compiled = new Map<string, string>()
    for (const chunk of output) if (chunk.type === 'chunk') compiled.set(chunk.fileName, header + chunk.code)
    return new Map([...compiled].sort(([a], [b]) => a.localeCompare(b)))
  } finally {
    await bundle.close()
  }
}

/** Writes frames/*.js afresh. */
export async function writeFrames(): Promise<string[]> {
  for (const file of readdirSync(compiledFrames).filter((name) => name.endsWith('.js'))) rmSync(new URL(file, compiledFrames))
  const compiled = await compileFrames()
  for (const [file, text] of compiled) writeFileSync(new URL(file, compiledFrames), text)
  return [...compiled.keys()]
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) console.log(`frames/: ${(await writeFrames()).join(', ')}`)
