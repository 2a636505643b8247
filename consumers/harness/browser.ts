import { type Browser, chromium, type Page } from 'playwright-core'
import { chromiumLaunchOptions } from '../../test/chromium.js'

/**
 * Debian's Chromium, headless, with no traffic beyond this machine (test/chromium.ts).
 *
 * @example
 * const browser = await launchBrowser()
 * const { page, consoleMessages } = await openPage(browser)
 */
export function launchBrowser(): Promise<Browser> {
  return chromium.launch(chromiumLaunchOptions)
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
