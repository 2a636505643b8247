import { createServer, type Server } from 'node:http'
import { getFreePort } from '@latchkey/devnet'
import { ApiKeyStamper } from '@turnkey/api-key-stamper'
import { TurnkeyClient } from '@turnkey/http'
import { type Browser, chromium } from 'playwright-core'
import { afterAll, beforeAll } from 'vitest'
import { chromiumLaunchOptions } from '../../../test/chromium.js'
import { createKms, generateApiKeyPair, type Kms } from '../src/index.js'
import type { FramesOptions } from '../src/service.js'
import { testDatabase } from './database.js'

// The frames in Chromium, as their browser tests need them: a kms serving its frames to one app
// page (`appHtml`, on its own origin, which speaks the frame protocol by hand as a script in an app
// could), the parent organization's client (the backend's), and a browser.

export type FrameHarness = {
  browser: Browser
  appOrigin: string
  kms: Kms
  /** The parent organization's client: a backend's. */
  backend: TurnkeyClient
  parentOrganizationId: string
  /** A sub-organization whose root user has `email` (no keys): its id. */
  userWithEmail(email: string): Promise<string>
  /** The text of the newest mail to `email` in the kms's dev inbox. */
  mailTo(email: string): Promise<string>
}

/**
 * Starts the kms, the app page and Chromium before the file's tests, and stops them after; the
 * fields are set once `beforeAll` ran. `frames` adds to the frames' settings (chains, executor,
 * paymasters, app name).
 *
 * @example
 * const harness = useFrameHarness(appHtml)
 * test('default', async () => { const page = await harness.browser.newPage(); await page.goto(harness.appOrigin) })
 */
export function useFrameHarness(appHtml: string, frames: Omit<FramesOptions, 'port' | 'parentOrigins'> = {}): FrameHarness {
  let appServer: Server | undefined
  const harness = {
    async userWithEmail(email: string) {
      const created = await harness.backend.createSubOrganization({
        type: 'ACTIVITY_TYPE_CREATE_SUB_ORGANIZATION_V8',
        timestampMs: String(Date.now()),
        organizationId: harness.parentOrganizationId,
        parameters: {
          subOrganizationName: email,
          rootQuorumThreshold: 1,
          rootUsers: [{ userName: email, userEmail: email, apiKeys: [], authenticators: [], oauthProviders: [] }],
        },
      })
      return created.activity.result.createSubOrganizationResultV8!.subOrganizationId!
    },
    async mailTo(email: string) {
      const inbox = (await (await fetch(`${harness.kms.url}/dev/mailbox.json`)).json()) as { messages: { to: string; text: string }[] }
      return inbox.messages.find((message) => message.to === email)!.text
    },
  } as FrameHarness

  beforeAll(async () => {
    const appPort = await getFreePort()
    harness.appOrigin = `http://localhost:${appPort}`
    appServer = createServer((_request, response) => {
      response.writeHead(200, { 'content-type': 'text/html' })
      response.end(appHtml)
    })
    await new Promise<void>((resolve) => appServer!.listen(appPort, '127.0.0.1', resolve))
    harness.kms = createKms({
      port: await getFreePort(),
      ...(await testDatabase()),
      frames: { ...frames, port: await getFreePort(), parentOrigins: [harness.appOrigin] },
    })
    await harness.kms.start()
    const parentKey = generateApiKeyPair()
    harness.parentOrganizationId = (
      await harness.kms.createParentOrganization({ name: 'App', userName: 'backend', publicKey: parentKey.apiPublicKey })
    ).organizationId
    harness.backend = new TurnkeyClient({ baseUrl: harness.kms.url }, new ApiKeyStamper(parentKey))
    harness.browser = await chromium.launch(chromiumLaunchOptions)
  }, 120_000)

  afterAll(async () => {
    await harness.browser?.close()
    await new Promise((resolve) => appServer?.close(resolve))
    await harness.kms?.stop()
  })
  return harness
}
