import { createServer, type Server } from 'node:http'
import { getFreePort } from '@latchkey/devnet'
import react from '@vitejs/plugin-react'
import type { Page } from 'playwright-core'
import { build, defaultClientConditions } from 'vite'
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, inject, test } from 'vitest'
import { addPasskeyAuthenticator } from './authenticator.js'
import { type ConsoleEntry, failedRequest, launch } from './browser.js'
import { demo, es256OnlyPasskeyWarning, typeCodeInFrame, waitForText } from './page.js'

// The WebAuthn ceremony codes of SPEC §8 produced for real by Chromium and its virtual
// authenticator (CDP WebAuthn), each shown in our modal as a user sees it. The demo serves the
// signed-in case; a small app with our modal (e2e/passkeys/app.tsx) serves the misconfigured
// ones, on http://localhost:<port> and on http://127.0.0.1:<port>.
//
// A failing authenticator (ERROR_AUTHENTICATOR_GENERAL_ERROR, WebAuthn's UnknownError) cannot be
// played by the virtual authenticator: Chromium turns every failure an authenticator reports,
// virtual or not, into NotAllowedError (AuthenticatorCommonImpl::OnRegisterResponse and
// OnSignResponse), and its own UNKNOWN_ERROR (NotReadableError) only answers a request whose page
// is gone. The one authenticator whose failure reaches the page as it reports it is a remote one
// behind chrome.webAuthenticationProxy (remote-desktop software): an extension
// (e2e/passkeys/failing-authenticator) plays it here, in the same Chromium.

const stack = inject('stack')

let appServer: Server
let appPort: number
const files = new Map<string, { body: string | Uint8Array; type: string }>()

beforeAll(async () => {
  const output = await build({
    configFile: false,
    logLevel: 'warn',
    root: `${import.meta.dirname}/passkeys`,
    plugins: [react()],
    resolve: { conditions: ['source', ...defaultClientConditions] },
    build: { write: false, minify: false, rollupOptions: { input: 'app.tsx', output: { entryFileNames: 'app.js', assetFileNames: '[name][extname]' } } },
  })
  for (const result of Array.isArray(output) ? output : [output])
    if ('output' in result)
      for (const item of result.output)
        files.set(`/${item.fileName}`, {
          body: item.type === 'chunk' ? item.code : item.source,
          type: item.fileName.endsWith('.css') ? 'text/css' : 'text/javascript',
        })
  const styles = [...files.keys()].filter((name) => name.endsWith('.css'))
  const page = `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Ceremonies</title><link rel="icon" href="data:,">${styles
    .map((name) => `<link rel="stylesheet" href="${name}">`)
    .join('')}<script type="module" src="/app.js"></script></head><body><div id="root"></div></body></html>`
  appPort = await getFreePort()
  appServer = createServer((request, response) => {
    const path = new URL(request.url ?? '/', 'http://x').pathname
    const file = path === '/' ? { body: page, type: 'text/html; charset=utf-8' } : files.get(path)
    if (!file) return void response.writeHead(404).end()
    response.writeHead(200, { 'content-type': file.type }).end(file.body)
  })
  await new Promise<void>((resolve, reject) => {
    appServer.once('error', reject)
    appServer.listen(appPort, '127.0.0.1', resolve)
  })
})
afterAll(async () => {
  await new Promise((resolve) => appServer?.close(resolve))
})

let browser: Awaited<ReturnType<typeof launch>>
beforeEach(async () => {
  browser = await launch()
})
afterEach(async () => {
  await browser.close()
})

/** The extension that stands in for the machine's authenticator and fails every ceremony. */
const FAILING_AUTHENTICATOR = `${import.meta.dirname}/passkeys/failing-authenticator`

/**
 * The ceremony page names a backend that is not there (port 9, which Chromium refuses): opening the
 * modal asks it whether it offers guests, and the browser logs that failed request.
 */
const absentBackendConfig = failedRequest('http://localhost:9/auth/config')

/** Core logs a failed flow once, as an error (a misconfiguration, not a user's cancellation). */
const loggedCeremonyError = (entry: ConsoleEntry) =>
  entry.kind === 'error' && entry.text.startsWith('[latchkey]') && entry.text.includes('WebauthnCeremonyError')

/** "Create a passkey" in the modal of the page at `url`; the modal's alert as shown. */
async function createPasskeyAt(page: Page, url: string) {
  await page.goto(url)
  await demo(page).connectButton.click()
  const modal = page.getByRole('dialog', { name: /Connect a wallet|Sign in/ })
  await modal.getByRole('button', { name: 'Create a passkey', exact: true }).click()
  await modal.getByRole('textbox', { name: 'Email' }).fill(`ceremony.${Date.now()}@example.test`)
  await modal.getByRole('button', { name: 'Continue', exact: true }).click()
  const alert = modal.getByRole('alert')
  await alert.waitFor()
  return alert
}

describe('WebAuthn ceremony codes (SPEC §8)', () => {
  test('error: ERROR_AUTHENTICATOR_PREVIOUSLY_REGISTERED — adding a passkey on the authenticator that holds the user’s passkey', async () => {
    const { page } = browser
    browser.expectConsole('the ES256-only passkey options (SPEC §9)', es256OnlyPasskeyWarning)
    browser.expectConsole('the ceremony failure, logged by core', loggedCeremonyError)
    const ui = demo(page)
    const authenticator = await addPasskeyAuthenticator(page)
    await page.goto(stack.demo)
    await ui.connectButton.click()
    const modal = page.getByRole('dialog', { name: /Connect a wallet|Sign in/ })
    await modal.getByRole('button', { name: 'Create a passkey', exact: true }).click()
    const email = `twice.${Date.now()}@example.test`
    await modal.getByRole('textbox', { name: 'Email' }).fill(email)
    await modal.getByRole('button', { name: 'Continue', exact: true }).click()
    await typeCodeInFrame(page, { kms: stack.kms, email })
    await waitForText(ui.address, /^0x[0-9a-fA-F]{40}$/)

    await page.getByRole('button', { name: /^Account/ }).click()
    const account = page.getByRole('dialog', { name: 'Account' })
    await account.getByRole('button', { name: 'Add a passkey', exact: true }).click()
    expect(await waitForText(account.getByRole('alert'), 'This passkey is already registered.')).toBe('This passkey is already registered.')
    // Nothing was registered twice: the authenticator still holds the one passkey.
    expect(await authenticator.credentials()).toHaveLength(1)
  })

  test('error: ERROR_INVALID_DOMAIN — an app served from an IP address, where no passkey can live', async () => {
    const { page } = browser
    browser.expectConsole('the ES256-only passkey options (SPEC §9)', es256OnlyPasskeyWarning)
    browser.expectConsole('the ceremony failure, logged by core', loggedCeremonyError)
    browser.expectConsole('the guest offer asked of the page’s absent backend', absentBackendConfig)
    await addPasskeyAuthenticator(page)
    const alert = await createPasskeyAt(page, `http://127.0.0.1:${appPort}/`)
    expect(await alert.getByText('Passkeys cannot be used on this domain.', { exact: true }).count()).toBe(1)
    expect(await alert.getByText('127.0.0.1 is an invalid domain', { exact: true }).count()).toBe(1)
  })

  test('error: ERROR_INVALID_RP_ID — a relying party id that is not this site', async () => {
    const { page } = browser
    browser.expectConsole('the ES256-only passkey options (SPEC §9)', es256OnlyPasskeyWarning)
    browser.expectConsole('the ceremony failure, logged by core', loggedCeremonyError)
    browser.expectConsole('the guest offer asked of the page’s absent backend', absentBackendConfig)
    const authenticator = await addPasskeyAuthenticator(page)
    const alert = await createPasskeyAt(page, `http://localhost:${appPort}/?rpId=login.example.com`)
    expect(await alert.getByText('The passkey relying party id does not match this site.', { exact: true }).count()).toBe(1)
    expect(await alert.getByText('The RP ID "login.example.com" is invalid for this domain', { exact: true }).count()).toBe(1)
    expect(await authenticator.credentials()).toEqual([])
  })

  test('error: ERROR_AUTHENTICATOR_GENERAL_ERROR — the authenticator fails, creating a passkey and signing in with one', async () => {
    const failing = await launch({ extensions: [FAILING_AUTHENTICATOR] })
    try {
      failing.expectConsole('the ES256-only passkey options (SPEC §9)', es256OnlyPasskeyWarning)
      failing.expectConsole('the ceremony failures, logged by core', loggedCeremonyError)
      const worker = failing.context.serviceWorkers()[0] ?? (await failing.context.waitForEvent('serviceworker'))
      // Attached as the browser's authenticator (undefined: no error).
      expect(await worker.evaluate(() => (self as unknown as { attached: Promise<string | undefined> }).attached)).toBeUndefined()
      const alert = await createPasskeyAt(failing.page, stack.demo)
      expect(await alert.getByText('The authenticator failed.', { exact: true }).count()).toBe(1)
      expect(
        await alert.getByText('The authenticator was unable to process the specified options, or could not create a new credential', { exact: true }).count(),
      ).toBe(1)

      // Signing in with a passkey: the same failure, the same code.
      const { page } = failing
      await page.goto(stack.demo)
      await demo(page).connectButton.click()
      const modal = page.getByRole('dialog', { name: /Connect a wallet|Sign in/ })
      await modal.getByRole('button', { name: 'Continue with passkey', exact: true }).click()
      const signInAlert = modal.getByRole('alert')
      await signInAlert.waitFor()
      expect(await signInAlert.getByText('The authenticator failed.', { exact: true }).count()).toBe(1)
      expect(await demo(page).address.count()).toBe(0)
    } finally {
      await failing.close()
    }
  })
})
