import { mkdtemp } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { type BrowserContext, chromium, type Page } from 'playwright-core'
import { chromiumLaunchOptions } from '../test/chromium.js'

/** An error or a warning in the browser's console, or an uncaught error, from any page, frame or worker. */
export type ConsoleEntry = {
  kind: 'error' | 'warning' | 'uncaught'
  text: string
  /** The script or the resource it is about (a failed request's URL), when the browser says; else ''. */
  source: string
  /** The page it showed in (the top-level document, also for its frames). */
  page: string
}

/**
 * A request to `url` (origin and path, any query) that the browser reports as failed: the
 * console line every browser prints for a 4xx or 5xx answer, matched by URL, not by its wording.
 *
 * @example
 * browser.expectConsole('the wrong code, refused', failedRequest(`${backend}/auth/email/verify`))
 */
export const failedRequest =
  (url: string) =>
  (entry: ConsoleEntry): boolean =>
    entry.kind === 'error' && entry.source.split('?')[0] === url

/** A console message a test provokes on purpose: `matches` picks it out; it must show before the test ends. */
export type ExpectedConsole = { description: string; matches: (entry: ConsoleEntry) => boolean }

export type Browser = {
  context: BrowserContext
  page: Page
  /**
   * Declares a console error or warning this test provokes on purpose (a refused frame, a
   * dismissed prompt). Matching entries are allowed; each declaration must match at least one.
   * Everything else fails the test in `close()`.
   *
   * @example
   * browser.expectConsole('the rejected signature, logged as a warning', (entry) => entry.kind === 'warning' && /rejected/i.test(entry.text))
   */
  expectConsole(description: string, matches: ExpectedConsole['matches']): void
  /** Everything recorded so far, expected or not. */
  console(): readonly ConsoleEntry[]
  /** Closes the browser; throws when the console had an unexpected entry, or an expected one never showed. */
  close(): Promise<void>
}

/** How long `close()` waits for a declared console message that has not shown yet. */
const EXPECTED_CONSOLE_DEADLINE_MS = 10_000

const describeEntry = (entry: ConsoleEntry) => `  [${entry.kind}] ${entry.text}\n    from ${entry.source || '(no source)'} on ${entry.page}`

/**
 * Debian's Chromium, headless, with a fresh profile, no traffic beyond this machine and only the
 * given unpacked `extensions`. Every
 * page, frame and worker of the context is listened to: a working flow logs no error and no
 * warning, so `close()` fails the test on any it did not declare with `expectConsole`.
 *
 * @example
 * const browser = await launch()
 * await browser.page.goto(stack.demo)
 * await browser.close()
 */
export async function launch(options: { extensions?: readonly string[] } = {}): Promise<Browser> {
  const extensions = options.extensions ?? []
  const context = await chromium.launchPersistentContext(await mkdtemp(join(tmpdir(), 'latchkey-e2e-')), {
    ...chromiumLaunchOptions,
    // Unpacked extensions (a directory each), for a party only an extension can play.
    args: [
      ...chromiumLaunchOptions.args,
      ...(extensions.length ? [`--disable-extensions-except=${extensions.join(',')}`, `--load-extension=${extensions.join(',')}`] : []),
    ],
  })
  const entries: ConsoleEntry[] = []
  const expected: ExpectedConsole[] = []
  let recording = true
  let onEntry = () => {}
  const record = (entry: ConsoleEntry) => {
    if (!recording) return
    entries.push(entry)
    onEntry()
  }
  context.on('console', (message) => {
    const kind = message.type()
    if (kind !== 'error' && kind !== 'warning') return
    record({ kind, text: message.text(), source: message.location().url, page: message.page()?.url() ?? '' })
  })
  context.on('weberror', (webError) => {
    const error = webError.error()
    record({ kind: 'uncaught', text: `${error.name}: ${error.message}\n${error.stack ?? ''}`, source: '', page: webError.page()?.url() ?? '' })
  })

  const unseen = () => expected.filter((expectation) => !entries.some(expectation.matches))
  /** Resolves once every declared message has shown, or at the deadline (then `unseen()` names the missing). */
  const expectedShown = () =>
    new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, EXPECTED_CONSOLE_DEADLINE_MS)
      onEntry = () => {
        if (unseen().length) return
        clearTimeout(timer)
        resolve()
      }
      onEntry()
    })

  const page = context.pages()[0] ?? (await context.newPage())
  return {
    context,
    page,
    expectConsole(description, matches) {
      expected.push({ description, matches })
    },
    console: () => entries,
    async close() {
      await expectedShown()
      recording = false
      await context.close()
      const unexpected = entries.filter((entry) => !expected.some((expectation) => expectation.matches(entry)))
      const missing = unseen()
      const problems = [
        ...(unexpected.length ? [`Unexpected console errors or warnings:\n${unexpected.map(describeEntry).join('\n')}`] : []),
        ...(missing.length ? [`Expected console messages that never showed:\n${missing.map((entry) => `  ${entry.description}`).join('\n')}`] : []),
      ]
      if (problems.length) throw new Error(problems.join('\n'))
    },
  }
}

/** Everything Latchkey keeps in the page's localStorage. */
export function latchkeyStorage(page: Page): Promise<Record<string, string>> {
  return page.evaluate(() =>
    Object.fromEntries(
      Object.keys(localStorage)
        .filter((k) => k.startsWith('latchkey.'))
        .map((k) => [k, localStorage.getItem(k) ?? '']),
    ),
  )
}
