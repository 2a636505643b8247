/**
 * What the kms's consent frame page downloads: `consent.js` and the chunks it imports statically,
 * as `npm run build:frames -w @latchkey/kms` wrote them to packages/kms/frames/ (the files the kms
 * serves as they are). Each file compressed on its own, as bench:size counts every other figure.
 */
import { readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { brotliCompressSync, constants, gzipSync } from 'node:zlib'

/** Issue 25's target: the confirmation frame's own code, at most this (gzip). */
export const CONSENT_FRAME_GZIP_BUDGET_BYTES = 60 * 1024
/** Issue 30's target for every locale catalogue, the frame's too: each catalogue file at most this (gzip). */
export const FRAME_CATALOGUE_GZIP_BUDGET_BYTES = 3 * 1024

const framesDirectory = join(import.meta.dirname, '..', 'packages', 'kms', 'frames')

/** The page script and its static imports (`from"./x.js"`, `import"./x.js"`), each once. */
function scriptsOf(entry: string): string[] {
  const seen = new Set<string>()
  const visit = (file: string) => {
    if (seen.has(file)) return
    seen.add(file)
    const code = readFileSync(join(framesDirectory, file), 'utf8')
    for (const [, imported] of code.matchAll(/(?:from|import)\s*["']\.\/([\w.-]+\.js)["']/g)) visit(imported!)
  }
  visit(entry)
  return [...seen]
}

/**
 * The consent frame's catalogue files, each compressed on its own: a locale's texts
 * (`shared-<locale>.js`) and its texts with values (`shared-<locale>.values.js`, downloaded beside
 * the formatter, `shared-values.js`); English's texts with values (`shared-valueTexts.js`) and dialog
 * texts (`shared-dialog.js`). The largest is the figure issue 30's budget holds.
 */
export function frameCatalogueSizes(): { file: string; gzip: number }[] {
  const files = readdirSync(framesDirectory).filter((file) => /^shared-(?:[a-z]{2}(?:\.values)?|dialog|valueTexts)\.js$/.test(file))
  return files.map((file) => ({ file, gzip: gzipSync(readFileSync(join(framesDirectory, file)), { level: 9 }).length })).sort((a, b) => b.gzip - a.gzip)
}

export function consentFrameSize(): { files: string[]; raw: number; gzip: number; brotli: number } {
  const files = scriptsOf('consent.js')
  let raw = 0
  let gzip = 0
  let brotli = 0
  for (const file of files) {
    const bytes = readFileSync(join(framesDirectory, file))
    raw += bytes.length
    gzip += gzipSync(bytes, { level: 9 }).length
    brotli += brotliCompressSync(bytes, { params: { [constants.BROTLI_PARAM_QUALITY]: 11 } }).length
  }
  return { files, raw, gzip, brotli }
}
