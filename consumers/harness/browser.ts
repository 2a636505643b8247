import { type Browser, chromium, type Page } from 'playwright-core'

/**
 * Debian's Chromium, headless, with no traffic beyond this machine (the flags of e2e/browser.ts).
 *
 * @example
 * const browser = await launchBrowser()
 * const { page, consoleMessages } = await openPage(browser)
 */
export function launchBrowser(): Promise<Browser> {
  return chromium.launch({
    executablePath: '/usr/bin/chromium',
    headless: true,
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
      '--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1, EXCLUDE localhost',
    ],
  })
}

export type ConsolePage = {
  page: Page
  /**
   * Every console error and warning and every uncaught error of the page so far, as
   * `error: …`, `warning: …` or `pageerror: …`. A consumer test expects it empty at its end.
   */
  consoleMessages: string[]
  close(): Promise<void>
}

/**
 * A page in a fresh context (no storage shared with other tests) that records what its console
 * says above the level of information, and what it throws.
 *
 * @example
 * const { page, consoleMessages } = await openPage(browser)
 * await page.goto(url)
 * expect(consoleMessages).toEqual([])
 */
export async function openPage(browser: Browser): Promise<ConsolePage> {
  const context = await browser.newContext()
  const page = await context.newPage()
  const consoleMessages: string[] = []
  page.on('console', (message) => {
    const type = message.type()
    if (type !== 'error' && type !== 'warning' && type !== 'assert') return
    // Chromium's text for a failed load does not name the resource; its location does.
    const text = message.text()
    consoleMessages.push(`${type}: ${text}${text.startsWith('Failed to load resource') ? ` ${message.location().url}` : ''}`)
  })
  page.on('pageerror', (error) => consoleMessages.push(`pageerror: ${error.stack ?? error.message}`))
  return { page, consoleMessages, close: () => context.close() }
}
