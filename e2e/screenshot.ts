import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import pixelmatch from 'pixelmatch'
import { PNG } from 'pngjs'

/** A pixel differs when its colour distance (pixelmatch's YIQ measure, 0–1) exceeds this: anti-aliasing and hinting stay below. */
export const PIXEL_THRESHOLD = 0.2
/** At most this share of an image's pixels may differ: a glyph hinted one pixel over, not a changed layout. */
export const MAX_DIFFERING_SHARE = 0.001

/** Where the reference images live, where a failure leaves the actual image and the diff, and whether to rewrite the references. */
export type ScreenshotOptions = { directory: string; artifacts: string; update: boolean }

/** The image's pixels compared with its reference: '' when within tolerance, else why not. */
export function compareImage(name: string, actual: Buffer, { directory, artifacts, update }: ScreenshotOptions): string {
  const file = join(directory, `${name}.png`)
  if (update) {
    mkdirSync(directory, { recursive: true })
    writeFileSync(file, actual)
    return ''
  }
  if (!existsSync(file))
    return `${name}: no reference image e2e/screenshots/${name}.png; make it with LATCHKEY_UPDATE_SCREENSHOTS=1 npx vitest run --config e2e/vitest.config.ts e2e/screenshots.e2e.ts`
  const expected = PNG.sync.read(readFileSync(file))
  const got = PNG.sync.read(actual)
  mkdirSync(artifacts, { recursive: true })
  if (expected.width !== got.width || expected.height !== got.height) {
    writeFileSync(join(artifacts, `${name}.actual.png`), actual)
    return `${name}: ${got.width}×${got.height}, the reference is ${expected.width}×${expected.height} (actual in e2e/.artifacts/screenshots/)`
  }
  const diff = new PNG({ width: got.width, height: got.height })
  const differing = pixelmatch(expected.data, got.data, diff.data, got.width, got.height, { threshold: PIXEL_THRESHOLD })
  const share = differing / (got.width * got.height)
  if (share <= MAX_DIFFERING_SHARE) return ''
  writeFileSync(join(artifacts, `${name}.actual.png`), actual)
  writeFileSync(join(artifacts, `${name}.diff.png`), PNG.sync.write(diff))
  return `${name}: ${differing} pixels differ (${(share * 100).toFixed(2)}% > ${MAX_DIFFERING_SHARE * 100}%); actual and diff in e2e/.artifacts/screenshots/`
}
