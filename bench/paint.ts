/**
 * Time to a usable connect button in headless Chromium: the minimal Latchkey app against the
 * React-only baseline, interleaved run by run so machine drift hits both alike. Run
 * `npm run bench:size` first (it builds both apps into bench/.out/).
 *
 *   npm run bench:paint [-- --runs 7]
 *
 * "usable" = the first animation frame in which a visible, enabled <button> whose text matches
 * /connect/i is laid out, measured in the page from navigation start (the probe of
 * research/bundle-anchors.md). The figure that matters is the difference of the medians.
 */
import { existsSync } from 'node:fs'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { getFreePort, staticServer } from '@latchkey/devnet'
import { chromium } from 'playwright-core'
import { chromiumLaunchOptions } from '../test/chromium.js'

const runsArg = process.argv.indexOf('--runs')
const runs = runsArg > 0 ? Number(process.argv[runsArg + 1]) : 7
const variants = ['baseline', 'latchkey'] as const

const probe = `
  (() => {
    const found = () => [...document.querySelectorAll('button')].some((b) => {
      const r = b.getBoundingClientRect()
      return /connect/i.test(b.textContent ?? '') && !b.disabled && r.width > 0 && r.height > 0
    })
    window.__usable = new Promise((resolve) => {
      const tick = () => (found() ? resolve(performance.now()) : requestAnimationFrame(tick))
      requestAnimationFrame(tick)
    })
  })()
`

async function measureOnce(url: string): Promise<number> {
  const profile = await mkdtemp(join(tmpdir(), 'latchkey-paint-'))
  const context = await chromium.launchPersistentContext(profile, chromiumLaunchOptions)
  try {
    const page = context.pages()[0] ?? (await context.newPage())
    await page.addInitScript(probe)
    await page.goto(url)
    return await page.evaluate(() => (window as unknown as { __usable: Promise<number> }).__usable)
  } finally {
    await context.close()
    await rm(profile, { recursive: true, force: true })
  }
}

const servers = await Promise.all(
  variants.map(async (name) => {
    const root = join(import.meta.dirname, '.out', name)
    if (!existsSync(join(root, 'index.html'))) throw new Error(`${root} is missing: run npm run bench:size first`)
    const server = staticServer({ name, root, port: await getFreePort(), host: '127.0.0.1' })
    await server.start()
    return server
  }),
)
try {
  const times: Record<(typeof variants)[number], number[]> = { baseline: [], latchkey: [] }
  for (const [i, server] of servers.entries()) await measureOnce(server.url).then(() => void i) // warm-up
  for (let run = 0; run < runs; run++)
    for (const [i, server] of servers.entries()) times[variants[i] as (typeof variants)[number]].push(await measureOnce(server.url))
  const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] as number
  console.log(`\nTime to a usable connect button, ms from navigation (median of ${runs}, interleaved)\n`)
  for (const name of variants)
    console.log(`${name.padEnd(10)} ${median(times[name]).toFixed(0).padStart(5)}   runs: ${times[name].map((t) => t.toFixed(0)).join(', ')}`)
  console.log(`\nlatchkey − baseline: ${(median(times.latchkey) - median(times.baseline)).toFixed(0)} ms (target ≤ 30 ms)`)
  console.log('Reference (research/bundle-anchors.md, painted − floor): RainbowKit +204 ms, AppKit +605 ms')
} finally {
  for (const server of servers) await server.stop()
}
