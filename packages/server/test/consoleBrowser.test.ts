import type { AddressInfo } from 'node:net'
import { serve } from '@hono/node-server'
import { type Browser, chromium, type Locator, type Page } from 'playwright-core'
import { afterAll, beforeAll, expect, test } from 'vitest'
import { chromiumLaunchOptions } from '../../../test/chromium.js'
import { createServerApp } from '../src/index.js'
import { newEmail, useBackend } from './backend.js'
import { parentApprovals } from './consoleSetup.js'

// The operator console (GET /admin, issue 29 item 7) in Debian's Chromium, found by accessible
// names alone: signing in with the admin token (a wrong one shows the API's 401 text), finding a
// user and their activities, approving a pending approval, replaying a webhook delivery. Any
// console error (a Content-Security-Policy or Trusted Types violation among them) fails it.

const { t, signedInByEmail } = useBackend()
const token = 'admin-token-of-the-console-browser-0123456789'
let browser: Browser
let server: ReturnType<typeof serve>
let origin: string
let approvals: Awaited<ReturnType<typeof parentApprovals>>

beforeAll(async () => {
  approvals = await parentApprovals(t)
  browser = await chromium.launch(chromiumLaunchOptions)
}, 60_000)
afterAll(async () => {
  await browser?.close()
  await new Promise((resolve) => server?.close(resolve))
})

async function serveConsole() {
  const app = createServerApp({ ...t.options, adminToken: token })
  server = await new Promise<ReturnType<typeof serve>>((resolve) => {
    const started = serve({ fetch: app.fetch, port: 0, hostname: '127.0.0.1' }, () => resolve(started))
  })
  origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
}

/** Waits until `locator` (one element) shows exactly `text`, then checks it. */
async function shows(locator: Locator, text: string) {
  await locator.filter({ hasText: new RegExp(`^${text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}$`) }).waitFor()
  expect(await locator.textContent()).toBe(text)
}
const visible = (locator: Locator) => locator.waitFor({ state: 'visible' })
const gone = (locator: Locator) => locator.waitFor({ state: 'detached' })

/** A page whose console errors and uncaught exceptions are collected in `errors`. */
async function consolePage(): Promise<{ page: Page; errors: string[] }> {
  const page = await (await browser.newContext()).newPage()
  const errors: string[] = []
  page.on('console', (message) => {
    if (message.type() === 'error' && !/401 \(Unauthorized\)/.test(message.text())) errors.push(message.text())
  })
  page.on('pageerror', (error) => errors.push(error.message))
  return { page, errors }
}

test('default: an operator signs in, finds a user and their activity, approves an approval and replays a delivery', async () => {
  await serveConsole()
  const hooks = 'http://127.0.0.1:9/hooks'
  await t.store.webhooks.createEndpoint({ url: hooks, eventTypes: ['user.created'], at: t.clock })
  const email = newEmail()
  const user = await signedInByEmail(email)
  const [created] = await t.store.webhooks.claim(t.clock + 10, 60_000, 10)
  await t.store.webhooks.settle(created!, { at: t.clock + 11, delivered: false, status: 500 })
  const pending = await approvals.pendingApproval('approved in the console')

  const { page, errors } = await consolePage()
  await page.goto(`${origin}/admin`)
  // A wrong token: the API's 401 text, and still signed out.
  await page.getByLabel('Admin token').fill(`${token}-wrong`)
  await page.getByRole('button', { name: 'Sign in' }).click()
  await shows(page.getByRole('alert'), 'The admin API needs the admin token as a bearer token')
  expect(await page.getByRole('heading', { name: 'Users' }).isVisible()).toBe(false)
  expect(await page.evaluate(() => sessionStorage.length)).toBe(0)

  await page.getByLabel('Admin token').fill(token)
  await page.getByRole('button', { name: 'Sign in' }).click()
  await visible(page.getByRole('heading', { name: 'Users' }))
  await visible(page.getByRole('button', { name: 'Sign out' }))

  // A user by their email, their logins, MFA and an activity with its status.
  await page.getByRole('searchbox', { name: 'Email or address' }).fill(email)
  await page.getByRole('button', { name: 'Search' }).click()
  const users = page.getByRole('table', { name: 'Users' })
  await visible(users.getByRole('row', { name: new RegExp(user.address) }))
  expect(await users.getByRole('row').count()).toBe(2)
  await users.getByRole('button', { name: `Open ${email}` }).click()
  await visible(page.getByRole('heading', { name: `User ${email}` }))
  expect(await page.getByRole('list', { name: 'Logins' }).getByRole('listitem').allTextContents()).toEqual([`Email: ${email}`])
  expect(await page.getByRole('list', { name: 'Wallets' }).textContent()).toContain(user.address)
  expect(await page.getByRole('definition').allTextContents()).toContain('not enrolled')
  const login = page.getByRole('table', { name: 'Activities' }).getByRole('row', { name: /ACTIVITY_TYPE_OTP_LOGIN_V2/ })
  await shows(login.getByRole('cell').nth(1), 'ACTIVITY_STATUS_COMPLETED')

  // The pending approval, approved with the parent organization's key.
  const approvalRows = page.getByRole('table', { name: 'Pending approvals' }).getByRole('row', { name: new RegExp(pending.id) })
  await visible(approvalRows)
  await approvalRows.getByRole('button', { name: `Approve ACTIVITY_TYPE_CREATE_WALLET ${pending.id}` }).click()
  await shows(page.getByRole('status'), 'Approved ACTIVITY_TYPE_CREATE_WALLET: ACTIVITY_STATUS_COMPLETED')
  await gone(approvalRows)
  const wallets = (await approvals.bot.getWallets({ organizationId: t.parentOrganizationId })).wallets
  expect(wallets.map((wallet) => wallet.walletName)).toContain('approved in the console')

  // The given-up delivery, replayed: pending again, its attempts counted afresh.
  const deliveries = page.getByRole('table', { name: 'Webhook deliveries' })
  await shows(
    deliveries
      .getByRole('row', { name: /user\.created/ })
      .getByRole('cell')
      .nth(2),
    'given up',
  )
  await deliveries.getByRole('button', { name: `Replay user.created to ${hooks}` }).click()
  await shows(page.getByRole('status'), `Replaying user.created to ${hooks}`)
  await shows(
    deliveries
      .getByRole('row', { name: /user\.created/ })
      .getByRole('cell')
      .nth(2),
    'pending',
  )
  expect((await t.store.webhooks.allDeliveries({ limit: 10 }))!.map((row) => [row.type, row.attempts, row.given_up_at])).toEqual([['user.created', 0, null]])

  // Signed out: the token is gone from the tab.
  await page.getByRole('button', { name: 'Sign out' }).click()
  await visible(page.getByLabel('Admin token'))
  expect(await page.evaluate(() => sessionStorage.length)).toBe(0)
  expect(errors).toEqual([])
}, 60_000)
