import { mkdtemp } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { type BrowserContext, chromium, type Page } from 'playwright-core'

/** Debian's Chromium, headless, with a fresh profile and no traffic beyond this machine. */
export async function launch(): Promise<{ context: BrowserContext; page: Page; close(): Promise<void> }> {
  const context = await chromium.launchPersistentContext(await mkdtemp(join(tmpdir(), 'latchkey-e2e-')), {
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
  const page = context.pages()[0] ?? (await context.newPage())
  const errors: string[] = []
  page.on('pageerror', (error) => errors.push(error.message))
  return {
    context,
    page,
    async close() {
      await context.close()
      if (errors.length) throw new Error(`Uncaught errors in the page:\n${errors.join('\n')}`)
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
