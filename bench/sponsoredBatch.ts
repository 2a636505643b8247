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
 * Median and p90 of each. Target (issue 27): sponsored ≤ 1.5× the reference, click to receipt.
 * Not asserted anywhere.
 *
 *   npm run bench:sponsored-batch [-- --runs 10]
 */
import { mkdtemp } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { getFreePort, startStack } from '@latchkey/devnet'
import { chromium, type Page } from 'playwright-core'
import { embeddedSignUp } from '../e2e/embeddedSignUp.js'
import { chromiumLaunchOptions } from '../test/chromium.js'

const index = process.argv.indexOf('--runs')
const runs = index > 0 ? Number(process.argv[index + 1]) : 10
if (!Number.isInteger(runs) || runs < 1) throw new Error('--runs must be a positive whole number')
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

/** Approves the consent frame's open dialog with the keyboard, as a user does; answers when the key went (epoch ms, this process's clock: the same machine's as the page's). */
async function approve(page: Page, title?: string): Promise<number> {
  const frame = page.frameLocator('iframe[id^="latchkey-consent-frame-"]')
  const dialog = title ? frame.getByRole('dialog', { name: title }) : frame.getByRole('dialog')
  await dialog.waitFor()
  await frame.locator('#approve').scrollIntoViewIfNeeded()
  await frame.locator('#approve:not([disabled])').waitFor()
  await frame.getByRole('button', { name: 'Approve', exact: true }).focus()
  const pressedAt = Date.now()
  await page.keyboard.press('Enter')
  await dialog.waitFor({ state: 'hidden' })
  return pressedAt
}

type Fee = 'sponsored' | 'eth'

/** One batch of `fee` from the click to its receipt shown: the two times, in ms. */
async function batch(page: Page, fee: Fee, delegates: boolean): Promise<{ total: number; afterApproval: number }> {
  await page.getByLabel('Gas', { exact: true }).selectOption(fee)
  await page.getByRole('button', { name: 'Send batch' }).click()
  // The account's first batch of either kind carries its EIP-7702 delegation, approved first.
  if (delegates) await approve(page, 'Upgrade your account (EIP-7702)')
  const approvedAt = await Promise.race([
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
  return { total: confirmed - clicked, afterApproval: confirmed - approvedAt }
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
  const context = await browser.newContext()
  await context.addInitScript(PAGE_CLOCK)
  const page = await context.newPage()
  await embeddedSignUp(page, { demo: stack.urls.demo, kms: stack.urls.kms!, email: `bench.${Date.now()}@example.test` })
  await page.getByRole('button', { name: 'Get test ETH' }).click()
  await page.getByText('Added 10 test ETH', { exact: true }).waitFor()
  // Warm-up: the first sponsored batch delegates the account; one of each before the runs.
  await batch(page, 'sponsored', true)
  await batch(page, 'eth', false)
  const times: Record<Fee, { total: number[]; afterApproval: number[] }> = {
    sponsored: { total: [], afterApproval: [] },
    eth: { total: [], afterApproval: [] },
  }
  for (let run = 0; run < runs; run++) {
    const order: Fee[] = run % 2 === 0 ? ['sponsored', 'eth'] : ['eth', 'sponsored']
    for (const fee of order) {
      const time = await batch(page, fee, false)
      times[fee].total.push(time.total)
      times[fee].afterApproval.push(time.afterApproval)
    }
  }
  const quantile = (values: number[], q: number) => [...values].sort((a, b) => a - b)[Math.min(values.length - 1, Math.floor(q * values.length))]!
  const row = (name: string, values: number[]) =>
    `${name.padEnd(44)} ${quantile(values, 0.5).toFixed(0).padStart(6)} ms  p90 ${quantile(values, 0.9).toFixed(0).padStart(6)} ms`
  console.log(`\n${runs} runs of each, interleaved (one embedded user, account delegated)`)
  console.log(row('sponsored batch, click to receipt', times.sponsored.total))
  console.log(row('ETH-paid 7702 batch, click to receipt (ref.)', times.eth.total))
  console.log(row('sponsored batch, approval to receipt', times.sponsored.afterApproval))
  console.log(row('ETH-paid 7702 batch, approval to receipt', times.eth.afterApproval))
  const ratio = quantile(times.sponsored.total, 0.5) / quantile(times.eth.total, 0.5)
  console.log(`\nsponsored ÷ ETH-paid, click to receipt (median): ${ratio.toFixed(2)}× (target ≤ ${TARGET_RATIO}×)`)
} finally {
  await browser.close()
  await stack.stop()
}
