/**
 * A sponsored batch against an ordinary one, from the click to the receipt, in Chromium on the
 * local stack (`npm start`'s code: anvil, Alto, kms, backend with its paymaster, the built demo):
 *
 * - sponsored (the target): the demo's "Send batch" with "Network fee: Paid by the app": an
 *   ERC-4337 UserOperation (the paymaster's stub, the bundler's estimate, the paymaster's data, the
 *   user's approval in the consent frame, the bundler's bundle) for two TKN mints;
 * - the reference: the same card with "Paid in ETH": the EIP-7702 batch the account sends and
 *   pays itself (two 0.001 ETH transfers), approved in the same frame.
 *
 * One embedded user (email sign-up, test ETH), whose account is delegated by a first batch of each
 * kind before the runs. Each run is one of each, interleaved; the first of each pair alternates.
 * Two times per batch, the page's own (epoch ms; `performance.timeOrigin + now()`): from the click
 * event on "Send batch" to the first frame in which "Batch status" reads confirmed, and from the
 * approval key press in the frame to that frame (the machine's share after the user said yes).
 * Median and p90 of each, and the ratio of the medians and the median of the pairs' ratios.
 * Target (issue 27): sponsored ≤ 1.5× the reference, click to receipt. Not asserted anywhere.
 *
 * Where the time goes: each batch's stages (see `stages`), from the frame's clock (its dialog shown,
 * its Approve enabled) and Chromium's timing of every POST of the page and its frames (named by
 * JSON-RPC method), with the load average before and after the runs. `--height`: the viewport's
 * height (720 by default), which is the consent frame's: a review taller than it needs a scroll.
 *
 *   npm run bench:sponsored-batch [-- --runs 10] [-- --height 720]
 */
import { mkdtemp } from 'node:fs/promises'
import { loadavg, tmpdir } from 'node:os'
import { join } from 'node:path'
import { getFreePort, startStack } from '@latchkey/devnet'
import { type BrowserContext, chromium, type Page } from 'playwright-core'
import { embeddedSignUp } from '../e2e/embeddedSignUp.js'
import { chromiumLaunchOptions } from '../test/chromium.js'

/** The value after `--name`, a positive whole number, or `fallback`. */
function option(name: string, fallback: number): number {
  const index = process.argv.indexOf(`--${name}`)
  const value = index > 0 ? Number(process.argv[index + 1]) : fallback
  if (!Number.isInteger(value) || value < 1) throw new Error(`--${name} must be a positive whole number`)
  return value
}
const runs = option('runs', 10)
/** The page's viewport height: Playwright's 720 by default; the frame is as tall. */
const height = option('height', 720)
const TARGET_RATIO = 1.5

/** Runs before the demo's scripts: when the page received the click on "Send batch", and the first frame in which "Batch status" reads confirmed (epoch ms). */
const PAGE_CLOCK = `(() => {
  const record = (window.__bench = { clicked: 0, confirmed: 0, confirmedText: '' })
  document.addEventListener('click', (event) => {
    const button = event.target instanceof Element ? event.target.closest('button') : null
    if (button && button.textContent.trim() === 'Send batch') {
      record.clicked = performance.timeOrigin + event.timeStamp
      record.confirmed = 0
    }
  }, true)
  new MutationObserver(() => {
    if (!record.clicked || record.confirmed) return
    const status = [...document.querySelectorAll('output')].find((output) => / confirmed /.test(output.textContent + ' '))
    if (status && status.textContent !== record.confirmedText) {
      record.confirmed = -1
      const text = status.textContent
      requestAnimationFrame(() => {
        record.confirmed = performance.timeOrigin + performance.now()
        record.confirmedText = text
      })
    }
  }).observe(document, { subtree: true, childList: true, characterData: true })
})()`

/** Runs in the consent frame too: when its review dialog (#review) shows, and when its Approve button (#approve) is enabled (epoch ms). */
const FRAME_CLOCK = `(() => {
  const record = (window.__benchFrame = { shown: 0, enabled: 0, below: false })
  new MutationObserver(() => {
    const review = document.getElementById('review')
    const approve = document.getElementById('approve')
    if (!review || !approve) return
    if (review.hidden) {
      record.shown = 0
      record.enabled = 0
      record.below = false
      return
    }
    if (!record.shown) {
      record.shown = performance.timeOrigin + performance.now()
      record.below = approve.getBoundingClientRect().bottom > innerHeight
    }
    if (!record.enabled && !approve.disabled && !approve.hidden) record.enabled = performance.timeOrigin + performance.now()
  }).observe(document, { subtree: true, childList: true, attributes: true, attributeFilter: ['hidden', 'disabled'] })
})()`

/**
 * What the consent frame's clock read for the dialog the user approved (epoch ms), whether its
 * Approve was below the frame's fold when it showed (scrolled to, as a user must), and when the
 * key went (this process's clock: the same machine's).
 */
type Approval = { shown: number; enabled: number; below: boolean; pressed: number }

/** Approves the consent frame's open dialog with the keyboard, as a user does. */
async function approve(page: Page, title?: string): Promise<Approval> {
  const frame = page.frameLocator('iframe[id^="latchkey-consent-frame-"]')
  const dialog = title ? frame.getByRole('dialog', { name: title }) : frame.getByRole('dialog')
  await dialog.waitFor()
  await frame.locator('#approve').scrollIntoViewIfNeeded()
  await frame.locator('#approve:not([disabled])').waitFor()
  await frame.getByRole('button', { name: 'Approve', exact: true }).focus()
  const content = await (await page.locator('iframe[id^="latchkey-consent-frame-"]').elementHandle())?.contentFrame()
  const { shown, enabled, below } = ((await content?.evaluate('window.__benchFrame')) ?? { shown: 0, enabled: 0, below: false }) as Omit<Approval, 'pressed'>
  const pressed = Date.now()
  await page.keyboard.press('Enter')
  await dialog.waitFor({ state: 'hidden' })
  return { shown, enabled, below, pressed }
}

/** A request of the page or its frames, as Chromium timed it (epoch ms): its JSON-RPC method, or `POST /path`. */
type Exchange = { name: string; start: number; end: number }
const exchanges: Exchange[] = []

/** Every finished POST of the context, named by its JSON-RPC method (or its path). */
function recordExchanges(context: BrowserContext) {
  context.on('requestfinished', (request) => {
    if (request.method() !== 'POST') return
    const timing = request.timing()
    if (timing.responseEnd < 0) return
    let name = `POST ${new URL(request.url()).pathname}`
    try {
      const body = JSON.parse(request.postData() ?? '') as { method?: unknown }
      if (typeof body.method === 'string') name = body.method
    } catch {}
    exchanges.push({ name, start: timing.startTime, end: timing.startTime + timing.responseEnd })
  })
}

type Fee = 'sponsored' | 'eth'
/** One batch, times in ms from the click: where each stage ended, and its requests. */
type Batch = { total: number; afterApproval: number; approval: Approval; clicked: number; confirmed: number; exchanges: Exchange[] }

/** One batch of `fee` from the click to its receipt shown. */
async function batch(page: Page, fee: Fee, delegates: boolean): Promise<Batch> {
  await page.getByLabel('Gas', { exact: true }).selectOption(fee)
  await page.getByRole('button', { name: 'Send batch' }).click()
  // The account's first batch of either kind carries its EIP-7702 delegation, approved first.
  if (delegates) await approve(page, 'Upgrade your account (EIP-7702)')
  const approval = await Promise.race([
    approve(page),
    page
      .getByRole('alert')
      .waitFor()
      .then(async () => {
        throw new Error(`the ${fee} batch failed: ${await page.getByRole('alert').textContent()}`)
      }),
  ])
  await page.waitForFunction('window.__bench.confirmed > 0', undefined, { polling: 'raf', timeout: 60_000 })
  const { clicked, confirmed } = (await page.evaluate('window.__bench')) as { clicked: number; confirmed: number }
  return { total: confirmed - clicked, afterApproval: confirmed - approval.pressed, approval, clicked, confirmed, exchanges: [] }
}

/** The requests a batch started between its click and its receipt shown (read after the runs: Chromium reports a finished request a moment after the page saw its answer). */
function withExchanges(run: Batch): Batch {
  return { ...run, exchanges: exchanges.filter((exchange) => exchange.start >= run.clicked && exchange.start <= run.confirmed) }
}

/** The batch's send request (the bundler's eth_sendUserOperation, or the chain's eth_sendRawTransaction). */
const SENDS = ['eth_sendUserOperation', 'eth_sendRawTransaction']
/** The reads that find the batch included (the last one before it shows confirmed found it). */
const RECEIPTS = ['eth_getUserOperationReceipt', 'eth_getTransactionReceipt']

/**
 * The batch's stages, each the time from the end of the one before (ms): `prepare`, the click to
 * the consent dialog shown (the wallet's reads and, sponsored, the paymaster's and the bundler's
 * answers); `arming`, the dialog shown to Approve enabled (the frame's guard against hidden
 * clicks); `harness`, Approve enabled to the key press (the benchmark's, not a user's, delay);
 * `sign+send`, the key press to the send request's answer; `inclusion`, that answer to the
 * answer of the receipt read that found it; `shown`, that answer to the frame that shows it.
 */
function stages(run: Batch): Record<string, number> {
  const send = run.exchanges.find((exchange) => SENDS.includes(exchange.name))
  const receipt = run.exchanges.filter((exchange) => RECEIPTS.includes(exchange.name) && exchange.end <= run.confirmed).at(-1)
  const sent = send?.end ?? Number.NaN
  const found = receipt?.end ?? Number.NaN
  return {
    prepare: run.approval.shown - run.clicked,
    arming: run.approval.enabled - run.approval.shown,
    harness: run.approval.pressed - run.approval.enabled,
    'sign+send': sent - run.approval.pressed,
    inclusion: found - sent,
    shown: run.confirmed - found,
  }
}

const stateDir = await mkdtemp(join(tmpdir(), 'latchkey-bench-sponsored-'))
const ports = Object.fromEntries(
  await Promise.all(
    ['chainA', 'chainB', 'relay', 'kms', 'frames', 'server', 'demo', 'wallet', 'oidc', 'bundlerA', 'bundlerB'].map(async (name) => [name, await getFreePort()]),
  ),
)
console.log('starting the local stack and building the demo…')
const stack = await startStack({ ports, stateDir })
const browser = await chromium.launch(chromiumLaunchOptions)
try {
  const context = await browser.newContext({ viewport: { width: 1280, height } })
  await context.addInitScript(PAGE_CLOCK)
  await context.addInitScript(FRAME_CLOCK)
  recordExchanges(context)
  const page = await context.newPage()
  await embeddedSignUp(page, { demo: stack.urls.demo, kms: stack.urls.kms!, email: `bench.${Date.now()}@example.test` })
  await page.getByRole('button', { name: 'Get test ETH' }).click()
  await page.getByText('Added 10 test ETH', { exact: true }).waitFor()
  // Warm-up: the first sponsored batch delegates the account; one of each before the runs.
  await batch(page, 'sponsored', true)
  await batch(page, 'eth', false)
  const load = loadavg()
  const results: Record<Fee, Batch[]> = { sponsored: [], eth: [] }
  for (let run = 0; run < runs; run++) {
    const order: Fee[] = run % 2 === 0 ? ['sponsored', 'eth'] : ['eth', 'sponsored']
    for (const fee of order) results[fee].push(await batch(page, fee, false))
  }
  const loadAfter = loadavg()
  await page.close()
  for (const fee of ['sponsored', 'eth'] as const) results[fee] = results[fee].map(withExchanges)
  const median = (values: number[]) => quantile(values, 0.5)
  // A stage whose request Chromium did not report (rare) is left out of its median, not NaN.
  const quantile = (values: number[], q: number) => {
    const known = values.filter((value) => !Number.isNaN(value)).sort((a, b) => a - b)
    return known.length ? known[Math.min(known.length - 1, Math.floor(q * known.length))]! : Number.NaN
  }
  const row = (name: string, values: number[]) =>
    `${name.padEnd(44)} ${median(values).toFixed(0).padStart(6)} ms  p90 ${quantile(values, 0.9).toFixed(0).padStart(6)} ms`
  const of = (fee: Fee, time: (run: Batch) => number) => results[fee].map(time)
  console.log(`\n${runs} runs of each, interleaved (one embedded user, account delegated; viewport 1280×${height})`)
  console.log(`load average ${load.map((value) => value.toFixed(2)).join(' ')} before, ${loadAfter.map((value) => value.toFixed(2)).join(' ')} after`)
  console.log(
    row(
      'sponsored batch, click to receipt',
      of('sponsored', (run) => run.total),
    ),
  )
  console.log(
    row(
      'ETH-paid 7702 batch, click to receipt (ref.)',
      of('eth', (run) => run.total),
    ),
  )
  console.log(
    row(
      'sponsored batch, approval to receipt',
      of('sponsored', (run) => run.afterApproval),
    ),
  )
  console.log(
    row(
      'ETH-paid 7702 batch, approval to receipt',
      of('eth', (run) => run.afterApproval),
    ),
  )

  console.log('\nstages, median ms (each from the end of the one before)')
  const names = Object.keys(stages(results.sponsored[0]!))
  console.log(`${'stage'.padEnd(12)} ${'sponsored'.padStart(10)} ${'ETH-paid'.padStart(10)} ${'difference'.padStart(11)}`)
  for (const name of names) {
    const sponsored = median(of('sponsored', (run) => stages(run)[name]!))
    const eth = median(of('eth', (run) => stages(run)[name]!))
    console.log(`${name.padEnd(12)} ${sponsored.toFixed(0).padStart(10)} ${eth.toFixed(0).padStart(10)} ${(sponsored - eth).toFixed(0).padStart(11)}`)
  }

  const below = (fee: Fee) => `${results[fee].filter((run) => run.approval.below).length} of ${runs}`
  console.log(`Approve below the frame's fold when the dialog showed (scrolled to): sponsored ${below('sponsored')}, ETH-paid ${below('eth')}`)

  for (const fee of ['sponsored', 'eth'] as const) {
    console.log(`\n${fee === 'sponsored' ? 'sponsored' : 'ETH-paid'} batch's requests: per batch, median start and end from the click, median duration (ms)`)
    const byName = new Map<string, { count: number[]; start: number[]; end: number[]; duration: number[] }>()
    for (const run of results[fee]) {
      const counted = new Map<string, number>()
      for (const exchange of run.exchanges) {
        const entry = byName.get(exchange.name) ?? { count: [], start: [], end: [], duration: [] }
        byName.set(exchange.name, entry)
        // The first of each name in the batch: its place in the sequence.
        if (!counted.has(exchange.name)) {
          entry.start.push(exchange.start - run.clicked)
          entry.end.push(exchange.end - run.clicked)
        }
        entry.duration.push(exchange.end - exchange.start)
        counted.set(exchange.name, (counted.get(exchange.name) ?? 0) + 1)
      }
      for (const [name, count] of counted) byName.get(name)!.count.push(count)
    }
    const rows = [...byName].sort(([, a], [, b]) => median(a.start) - median(b.start))
    for (const [name, entry] of rows)
      console.log(
        `  ${name.padEnd(40)} ×${median(entry.count)} ${median(entry.start).toFixed(0).padStart(6)} → ${median(entry.end).toFixed(0).padStart(6)}  ${median(entry.duration).toFixed(1).padStart(6)}`,
      )
  }

  const ratio = median(of('sponsored', (run) => run.total)) / median(of('eth', (run) => run.total))
  const pairs = results.sponsored.map((run, index) => run.total / results.eth[index]!.total)
  console.log(
    `\nsponsored ÷ ETH-paid, click to receipt: ${ratio.toFixed(2)}× of the medians, ${median(pairs).toFixed(2)}× the median of the ${runs} pairs (target ≤ ${TARGET_RATIO}×)`,
  )
} finally {
  await browser.close()
  await stack.stop()
}
