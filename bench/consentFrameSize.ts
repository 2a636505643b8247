/**
 * What the kms's consent frame page downloads: `consent.js` and the chunks it imports statically,
 * as `npm run build:frames -w @latchkey/kms` wrote them to packages/kms/frames/ (the files the kms
 * serves as they are). Each file compressed on its own, as bench:size counts every other figure.
 */
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { brotliCompressSync, constants, gzipSync } from 'node:zlib'

/** Issue 25's target: the confirmation frame's own code, at most this (gzip). */
export const CONSENT_FRAME_GZIP_BUDGET_BYTES = 60 * 1024

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
