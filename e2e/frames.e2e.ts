import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http'
import { getFreePort } from '@latchkey/devnet'
import { createKms, exportBundle, generateApiKeyPair, type Kms, signBundle } from '@latchkey/kms'
import { ApiKeyStamper } from '@turnkey/api-key-stamper'
import { TurnkeyClient } from '@turnkey/http'
import { english, generateMnemonic, mnemonicToAccount, privateKeyToAccount } from 'viem/accounts'
import { build } from 'vite'
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, inject, test } from 'vitest'
import { launch } from './browser.js'

// The kms frames in Chromium, driven by the official @turnkey/iframe-stamper from a page of an
// allowed origin (http://localhost:<port>) — the same page at http://127.0.0.1:<port> is a
// different origin, and is not allowed.

const ethereumAccount = {
  curve: 'CURVE_SECP256K1',
  pathFormat: 'PATH_FORMAT_BIP32',
  path: "m/44'/60'/0'/0/0",
  addressFormat: 'ADDRESS_FORMAT_ETHEREUM',
} as const

let parentBundle: string
let pagePort: number
let pageServer: Server
let kms: Kms
let framesUrl: string
let appClient: TurnkeyClient
let app: { organizationId: string; userId: string }
let allowed: string
let refused: string

// Each page names its (empty) icon, as an app would, so the browser asks for no /favicon.ico.
const head = (title: string) => `<meta charset="utf-8"><title>${title}</title><link rel="icon" href="data:,">`
const pages: Record<string, string> = {
  '/': `<!doctype html><html lang="en"><head>${head('App')}<script type="module" src="/parent.js"></script></head><body></body></html>`,
  // The app's page inside a frame of its own: the kms frame it embeds is nested.
  '/nested': `<!doctype html><html lang="en"><head>${head('Outer')}</head><body><iframe id="inner" src="/"></iframe></body></html>`,
}

function servePage(request: IncomingMessage, response: ServerResponse) {
  const path = new URL(request.url ?? '/', 'http://x').pathname
  if (path === '/parent.js') return void response.writeHead(200, { 'content-type': 'text/javascript' }).end(parentBundle)
  const page = pages[path]
  if (page) return void response.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end(page)
  response.writeHead(404).end()
}

beforeAll(async () => {
  // The embedding page's script: e2e/frames/parent.ts with the official packages, bundled for the browser.
  const output = await build({
    configFile: false,
    logLevel: 'warn',
    root: import.meta.dirname,
    build: { write: false, minify: false, lib: { entry: 'frames/parent.ts', formats: ['es'], fileName: 'parent' } },
  })
  const [result] = Array.isArray(output) ? output : [output]
  if (!result || !('output' in result)) throw new Error('the parent page did not build')
  parentBundle = result.output[0].code

  pagePort = await getFreePort()
  pageServer = createServer(servePage)
  await new Promise<void>((resolve, reject) => {
    pageServer.once('error', reject)
    pageServer.listen(pagePort, '127.0.0.1', resolve)
  })
  allowed = `http://localhost:${pagePort}`
  refused = `http://127.0.0.1:${pagePort}`

  kms = createKms({ port: await getFreePort(), frames: { port: await getFreePort(), parentOrigins: [allowed] } })
  await kms.start()
  framesUrl = kms.framesUrl!
  const keys = generateApiKeyPair()
  const parent = await kms.createParentOrganization({ name: 'Frames app', userName: 'alice', publicKey: keys.apiPublicKey })
  app = { organizationId: parent.organizationId, userId: parent.userId }
  appClient = new TurnkeyClient({ baseUrl: kms.url }, new ApiKeyStamper(keys))
})

afterAll(async () => {
  await kms?.stop()
  await new Promise((resolve) => pageServer?.close(resolve))
})

let browser: Awaited<ReturnType<typeof launch>>
beforeEach(async () => {
  browser = await launch()
})
afterEach(async () => {
  await browser.close()
})

const timestampMs = () => String(Date.now())

async function createWallet(walletName: string) {
  const { activity } = await appClient.createWallet({
    type: 'ACTIVITY_TYPE_CREATE_WALLET',
    timestampMs: timestampMs(),
    organizationId: app.organizationId,
    parameters: { walletName, accounts: [ethereumAccount] },
  })
  return activity.result.createWalletResult!
}

/** Opens the app page at `origin` and a frame `name` at `path`; resolves with the frame's public key. */
async function openFrame(origin: string, name: string, path: string, ttlMs?: number) {
  const { page } = browser
  if (page.url() !== `${origin}/`) await page.goto(`${origin}/`)
  return page.evaluate(([name, url, ttlMs]) => window.latchkeyTest.init(name, url, ttlMs), [name, `${framesUrl}${path}`, ttlMs] as const)
}

/** Runs a method of the official stamper of frame `name` in the page; resolves with its result, or the error's message. */
function stamperCall(
  name: string,
  method:
    | 'injectCredentialBundle'
    | 'injectWalletExportBundle'
    | 'injectKeyExportBundle'
    | 'injectImportBundle'
    | 'extractWalletEncryptedBundle'
    | 'getEmbeddedPublicKey'
    | 'applySettings',
  ...args: unknown[]
) {
  return browser.page.evaluate(
    async ([name, method, args]) => {
      const stamper = window.latchkeyTest.stamper(name) as unknown as Record<string, (...args: unknown[]) => Promise<unknown>>
      try {
        return { value: await stamper[method]!(...args) }
      } catch (error) {
        return { error: (error as Error).message }
      }
    },
    [name, method, args] as const,
  )
}

/** Everything the page received from frame `name` over its channel, and every window message. */
const receivedByPage = (name: string) =>
  browser.page.evaluate((name) => ({ channel: window.latchkeyTest.received(name), window: window.latchkeyTest.windowMessages() }), name)

/** The frame in the element `#id` (the stamper names its iframe after the frame). */
async function frameOf(id: string) {
  const frame = await (await browser.page.locator(`#${id}`).elementHandle())?.contentFrame()
  if (!frame) throw new Error(`no #${id} frame`)
  return frame
}

/** The frame's own IndexedDB entry, read by the test (the page cannot): a non-extractable key. */
async function storedKey(page: string) {
  const frame = await frameOf(page)
  return frame.evaluate(
    (name) =>
      new Promise<{ expiresAt: number; parentOrigin: string; extractable: boolean; algorithm: string } | null>((resolve, reject) => {
        const open = indexedDB.open('latchkey-frames', 1)
        open.onerror = () => reject(open.error)
        open.onsuccess = () => {
          const request = open.result.transaction('keys').objectStore('keys').get(name)
          request.onsuccess = () => {
            const stored = request.result as { expiresAt: number; parentOrigin: string; privateKey: CryptoKey } | undefined
            resolve(
              stored
                ? {
                    expiresAt: stored.expiresAt,
                    parentOrigin: stored.parentOrigin,
                    extractable: stored.privateKey.extractable,
                    algorithm: stored.privateKey.algorithm.name,
                  }
                : null,
            )
          }
        }
      }),
    `latchkey.frames.${page}.embeddedKey`,
  )
}

describe('auth frame', () => {
  test('default: handshake, credential bundle injected, TurnkeyClient stamped by the frame', async () => {
    const before = Date.now()
    const publicKey = await openFrame(allowed, 'auth', '/auth')
    expect(publicKey).toMatch(/^04[0-9a-f]{128}$/)
    const stored = await storedKey('auth')
    expect(stored).toMatchObject({ parentOrigin: allowed, extractable: false, algorithm: 'ECDH' })
    expect(stored!.expiresAt - before).toBeGreaterThanOrEqual(48 * 3600_000)
    expect(stored!.expiresAt - Date.now()).toBeLessThanOrEqual(48 * 3600_000)

    // Nothing to stamp with before a credential arrives.
    const whoamiBefore = await browser.page.evaluate(
      ([url, organizationId]) => window.latchkeyTest.whoami('auth', url, organizationId).catch((error: Error) => error.message),
      [kms.url, app.organizationId] as const,
    )
    expect(whoamiBefore).toBe('there is no credential to stamp with: inject a credential bundle first')

    const { activity } = await appClient.createReadWriteSession({
      type: 'ACTIVITY_TYPE_CREATE_READ_WRITE_SESSION_V2',
      timestampMs: timestampMs(),
      organizationId: app.organizationId,
      parameters: { targetPublicKey: publicKey },
    })
    const { credentialBundle } = activity.result.createReadWriteSessionResultV2!
    expect(await stamperCall('auth', 'injectCredentialBundle', credentialBundle)).toEqual({ value: true })

    const whoami = await browser.page.evaluate(([url, organizationId]) => window.latchkeyTest.whoami('auth', url, organizationId), [
      kms.url,
      app.organizationId,
    ] as const)
    expect(whoami).toEqual({ organizationId: app.organizationId, organizationName: 'Frames app', userId: app.userId, username: 'alice' })

    // The page received the public key and replies, never the credential.
    const received = await receivedByPage('auth')
    expect(received.channel.map((message) => (message as { type: string }).type)).toEqual(['PUBLIC_KEY_READY', 'ERROR', 'BUNDLE_INJECTED', 'STAMP'])
    expect(JSON.stringify(received)).not.toContain(credentialBundle)

    // A reload keeps the embedded key (IndexedDB) but not the credential (memory only).
    await browser.page.reload()
    expect(await openFrame(allowed, 'auth', '/auth')).toBe(publicKey)
    expect(
      await browser.page.evaluate(([url, organizationId]) => window.latchkeyTest.whoami('auth', url, organizationId).catch((error: Error) => error.message), [
        kms.url,
        app.organizationId,
      ] as const),
    ).toBe('there is no credential to stamp with: inject a credential bundle first')
  })

  test('behavior: dangerouslyOverrideIframeKeyTtl sets the recovery frame’s key lifetime; it refuses any bundle the page injects', async () => {
    const before = Date.now()
    const publicKey = await openFrame(allowed, 'recovery', '/recovery', 120_000)
    const stored = await storedKey('recovery')
    expect(stored!.expiresAt - before).toBeGreaterThanOrEqual(120_000)
    expect(stored!.expiresAt - Date.now()).toBeLessThanOrEqual(120_000)

    const other = generateApiKeyPair()
    const { activity } = await appClient.createReadWriteSession({
      type: 'ACTIVITY_TYPE_CREATE_READ_WRITE_SESSION_V2',
      timestampMs: timestampMs(),
      organizationId: app.organizationId,
      parameters: { targetPublicKey: other.apiPublicKey },
    })
    // The code a recovery email carries is pasted into the frame itself (security review H1).
    expect(await stamperCall('recovery', 'injectCredentialBundle', activity.result.createReadWriteSessionResultV2!.credentialBundle)).toEqual({
      error: 'the recovery frame opens only the code typed into it',
    })
    expect(await stamperCall('recovery', 'getEmbeddedPublicKey')).toEqual({ value: publicKey })
  })
})

describe('export frame', () => {
  test('default: the phrase shows inside the frame only; another signer is refused', async () => {
    const wallet = await createWallet('To export')
    const publicKey = await openFrame(allowed, 'export', '/export')

    // A bundle signed by a key that is not the kms's signer.
    const otherSigner = generateApiKeyPair().apiPrivateKey
    const forged = await exportBundle({
      signerPrivateKey: otherSigner,
      organizationId: app.organizationId,
      targetPublicKey: publicKey,
      plaintext: new TextEncoder().encode(generateMnemonic(english)),
    })
    const forgedSigner = (JSON.parse(forged) as { enclaveQuorumPublic: string }).enclaveQuorumPublic
    const refusal = `the bundle is signed by ${forgedSigner}, not by this service's signer ${kms.signerPublicKey}`
    expect(await stamperCall('export', 'injectWalletExportBundle', forged, app.organizationId)).toEqual({ error: refusal })
    const frame = browser.page.frameLocator('#export')
    expect(await frame.getByRole('alert').textContent()).toBe(`${refusal.charAt(0).toUpperCase()}${refusal.slice(1)}.`)
    expect(await frame.getByRole('list', { name: 'Secret recovery phrase' }).isHidden()).toBe(true)

    const { activity } = await appClient.exportWallet({
      type: 'ACTIVITY_TYPE_EXPORT_WALLET',
      timestampMs: timestampMs(),
      organizationId: app.organizationId,
      parameters: { walletId: wallet.walletId, targetPublicKey: publicKey },
    })
    const bundle = activity.result.exportWalletResult!.exportBundle
    expect(await stamperCall('export', 'injectWalletExportBundle', bundle, app.organizationId)).toEqual({ value: true })

    // The user sees the phrase in the frame; it is the wallet's.
    const words = await frame.getByRole('list', { name: 'Secret recovery phrase' }).getByRole('listitem').allTextContents()
    expect(words).toHaveLength(12)
    const mnemonic = words.join(' ')
    expect(mnemonicToAccount(mnemonic).address).toBe(wallet.addresses[0])
    expect(await frame.getByRole('alert').isHidden()).toBe(true)

    // The page cannot read the frame, and no message it received holds the phrase.
    expect(await browser.page.evaluate(() => (document.getElementById('export') as HTMLIFrameElement).contentDocument)).toBeNull()
    expect(
      await browser.page.evaluate(() => {
        try {
          return (document.getElementById('export') as HTMLIFrameElement).contentWindow!.document.body.textContent
        } catch (error) {
          return (error as Error).name
        }
      }),
    ).toBe('SecurityError')
    const received = await receivedByPage('export')
    expect(received.channel).toEqual([
      { type: 'PUBLIC_KEY_READY', value: publicKey },
      { type: 'ERROR', value: refusal, requestId: expect.any(String) },
      { type: 'BUNDLE_INJECTED', value: true, requestId: expect.any(String) },
    ])
    expect(received.window).toEqual([])
    expect(JSON.stringify(received)).not.toContain(words.slice(0, 2).join(' '))

    // The embedded key is gone: the bundle cannot be opened again.
    expect(await stamperCall('export', 'getEmbeddedPublicKey')).toEqual({ value: null })
    expect(await storedKey('export')).toBeNull()
    expect(await stamperCall('export', 'injectWalletExportBundle', bundle, app.organizationId)).toEqual({
      error: 'this frame has no embedded key (it was reset or has expired): initialise a new one',
    })
  })

  test('behavior: an account’s private key shows as hex, labelled with its address; settings restyle the box', async () => {
    const wallet = await createWallet('Key to export')
    const address = wallet.addresses[0]!
    const publicKey = await openFrame(allowed, 'export', '/export')
    expect(await stamperCall('export', 'applySettings', { styles: { fontSize: '18px', labelColor: 'rgb(1, 2, 3)' } })).toEqual({ value: true })
    expect(await stamperCall('export', 'applySettings', { styles: { backgroundImage: 'url(https://example.com/x.png)' } })).toEqual({
      error: expect.stringMatching(/^style backgroundImage is not allowed; allowed: padding, /),
    })

    const { activity } = await appClient.exportWalletAccount({
      type: 'ACTIVITY_TYPE_EXPORT_WALLET_ACCOUNT',
      timestampMs: timestampMs(),
      organizationId: app.organizationId,
      parameters: { address, targetPublicKey: publicKey },
    })
    const bundle = activity.result.exportWalletAccountResult!.exportBundle
    expect(await stamperCall('export', 'injectKeyExportBundle', bundle, app.organizationId, 'HEXADECIMAL', address)).toEqual({ value: true })
    const frame = browser.page.frameLocator('#export')
    const key = frame.getByLabel(`Private key of ${address}`).filter({ visible: true })
    const hex = (await key.textContent()) ?? ''
    expect(hex).toMatch(/^[0-9a-f]{64}$/)
    expect(privateKeyToAccount(`0x${hex}`).address).toBe(address)
    expect(await key.evaluate((element) => getComputedStyle(element.closest('section')!).fontSize)).toBe('18px')
    expect(await frame.getByRole('heading', { name: `Private key of ${address}` }).evaluate((element) => getComputedStyle(element).color)).toBe('rgb(1, 2, 3)')
    expect(JSON.stringify(await receivedByPage('export'))).not.toContain(hex)
  })
})

describe('import frame', () => {
  test('default: the typed phrase leaves the frame only encrypted to the kms, and imports to the expected address', async () => {
    const mnemonic = generateMnemonic(english)
    await openFrame(allowed, 'import', '/import')
    expect(await stamperCall('import', 'extractWalletEncryptedBundle')).toEqual({ error: 'there is no import bundle yet: inject one first' })

    const { activity } = await appClient.initImportWallet({
      type: 'ACTIVITY_TYPE_INIT_IMPORT_WALLET',
      timestampMs: timestampMs(),
      organizationId: app.organizationId,
      parameters: { userId: app.userId },
    })
    const importBundle = activity.result.initImportWalletResult!.importBundle
    expect(await stamperCall('import', 'injectImportBundle', importBundle, app.organizationId, 'someone-else')).toEqual({
      error: `the bundle belongs to user ${app.userId}, not someone-else`,
    })
    expect(await stamperCall('import', 'injectImportBundle', importBundle, app.organizationId, app.userId)).toEqual({ value: true })

    // A phrase that is not one is refused in the frame, where the user sees why.
    const field = browser.page.frameLocator('#import').getByLabel('Secret recovery phrase')
    await field.fill('correct horse battery staple')
    expect(await stamperCall('import', 'extractWalletEncryptedBundle')).toEqual({ error: 'a secret recovery phrase has 12, 15, 18, 21 or 24 words' })
    expect(await browser.page.frameLocator('#import').getByRole('alert').textContent()).toBe('A secret recovery phrase has 12, 15, 18, 21 or 24 words.')
    expect(await field.getAttribute('aria-invalid')).toBe('true')

    await field.fill(`  ${mnemonic.toUpperCase().replaceAll(' ', '\n')} `)
    const extracted = await stamperCall('import', 'extractWalletEncryptedBundle')
    const encryptedBundle = (extracted as { value: string }).value
    expect(Object.keys(JSON.parse(encryptedBundle) as object)).toEqual(['encappedPublic', 'ciphertext'])
    const received = JSON.stringify(await receivedByPage('import'))
    expect(received).not.toContain(mnemonic.split(' ').slice(0, 2).join(' '))

    const imported = await appClient.importWallet({
      type: 'ACTIVITY_TYPE_IMPORT_WALLET',
      timestampMs: timestampMs(),
      organizationId: app.organizationId,
      parameters: { userId: app.userId, walletName: 'Imported', encryptedBundle, accounts: [ethereumAccount] },
    })
    expect(imported.activity.result.importWalletResult!.addresses).toEqual([mnemonicToAccount(mnemonic).address])
  })

  test('error: an import bundle signed by another key is refused', async () => {
    await openFrame(allowed, 'import', '/import')
    const { activity } = await appClient.initImportWallet({
      type: 'ACTIVITY_TYPE_INIT_IMPORT_WALLET',
      timestampMs: timestampMs(),
      organizationId: app.organizationId,
      parameters: { userId: app.userId },
    })
    const genuine = JSON.parse(activity.result.initImportWalletResult!.importBundle) as Record<string, string>
    // The genuine data signed by another key, naming itself, then naming the kms's signer.
    const data = JSON.parse(Buffer.from(genuine['data']!, 'hex').toString('utf8')) as object
    const resigned = JSON.parse(signBundle(generateApiKeyPair().apiPrivateKey, data)) as Record<string, string>
    expect(resigned['data']).toBe(genuine['data'])
    expect(await stamperCall('import', 'injectImportBundle', JSON.stringify(resigned), app.organizationId, app.userId)).toEqual({
      error: `the bundle is signed by ${resigned['enclaveQuorumPublic']}, not by this service's signer ${kms.signerPublicKey}`,
    })
    const forged = JSON.stringify({ ...genuine, dataSignature: resigned['dataSignature'] })
    expect(await stamperCall('import', 'injectImportBundle', forged, app.organizationId, app.userId)).toEqual({ error: 'the bundle signature does not verify' })
  })
})

describe('origins and framing', () => {
  test('error: a page of another origin cannot embed the frames (frame-ancestors); the channel never opens', async () => {
    const { page } = browser
    // The browser reports the violation in the embedding page's console; the directive names it in every browser.
    browser.expectConsole('the frame-ancestors violation', (entry) => entry.kind === 'error' && entry.text.includes('frame-ancestors'))
    const violation = page.waitForEvent('console', (message) => message.type() === 'error' && message.text().includes('frame-ancestors'))
    await page.goto(`${refused}/`)
    const framesRequests: string[] = []
    page.on('request', (request) => {
      if (request.url().startsWith(framesUrl)) framesRequests.push(new URL(request.url()).pathname)
    })
    const blocked = page.waitForEvent('requestfailed', (request) => request.url() === `${framesUrl}/auth`)
    const state = await page.evaluate((url) => {
      const result = { settled: false }
      window.latchkeyTest.init('auth', url).then(
        () => (result.settled = true),
        () => (result.settled = true),
      )
      // The frame element's load event fires once the browser is done with the frame, whatever it shows.
      return new Promise<{ settled: boolean }>((resolve) =>
        document.getElementById('auth')!.addEventListener('load', () => queueMicrotask(() => resolve(result))),
      )
    }, `${framesUrl}/auth`)
    // The browser refused the frame's document: it never rendered, so none of its scripts or styles were asked for.
    await Promise.all([blocked, violation])
    expect(framesRequests.filter((path) => path !== '/auth')).toEqual([])
    expect(await page.frameLocator('#auth').locator('meta[name="latchkey-frame"]').count()).toBe(0)
    // The channel never opened: the stamper's init neither resolved nor rejected, and nothing came from the frame.
    expect(state).toEqual({ settled: false })
    expect(await receivedByPage('auth')).toEqual({ channel: [], window: [] })
  })

  test('error: where frame-ancestors is not enforced, the frame itself refuses that origin and says so', async () => {
    const { page } = browser
    // As in a browser without frame-ancestors: the frames' CSP removed on the way.
    await page.route(`${framesUrl}/auth`, async (route) => {
      const response = await route.fetch()
      const headers = { ...response.headers() }
      delete headers['content-security-policy']
      await route.fulfill({ response, headers })
    })
    browser.expectConsole(
      'the frame logs why it refuses the channel',
      (entry) => entry.kind === 'warning' && entry.source.startsWith(framesUrl) && entry.text.includes(`origin ${refused} is not allowed to embed this frame`),
    )
    await page.goto(`${refused}/`)
    const { message, settled } = await page.evaluate(
      async ([url, framesOrigin]) => {
        let settled = false
        window.latchkeyTest.init('auth', url).finally(() => (settled = true))
        const message = await window.latchkeyTest.windowMessageFrom(framesOrigin)
        return { message, settled }
      },
      [`${framesUrl}/auth`, framesUrl] as const,
    )
    expect(message).toEqual({ origin: framesUrl, data: { type: 'ERROR', value: `origin ${refused} is not allowed to embed this frame` } })
    expect(settled).toBe(false)
    expect(await receivedByPage('auth')).toEqual({ channel: [], window: [message] })
    expect(await page.frameLocator('#auth').getByRole('alert').textContent()).toBe(
      `This frame cannot run here: origin ${refused} is not allowed to embed this frame.`,
    )
  })

  test('error: a frame nested in another frame refuses to run, even under allowed origins', async () => {
    const { page } = browser
    browser.expectConsole(
      'the frame logs why it refuses the channel',
      (entry) => entry.kind === 'warning' && entry.source.startsWith(framesUrl) && entry.text.includes('this frame refuses to run inside a nested frame'),
    )
    await page.goto(`${allowed}/nested`)
    const inner = await frameOf('inner')
    await inner.waitForFunction(() => 'latchkeyTest' in window)
    const message = await inner.evaluate(
      ([url, framesOrigin]) => {
        void window.latchkeyTest.init('auth', url)
        return window.latchkeyTest.windowMessageFrom(framesOrigin)
      },
      [`${framesUrl}/auth`, framesUrl] as const,
    )
    expect(message).toEqual({ origin: framesUrl, data: { type: 'ERROR', value: 'this frame refuses to run inside a nested frame' } })
  })

  test('default: the stack serves the frames for the demo and the wallet', async () => {
    const stack = inject('stack')
    const response = await fetch(`${stack.frames}/auth`)
    expect(response.status).toBe(200)
    const policy = response.headers.get('content-security-policy')
    expect(policy).toContain(`frame-ancestors ${stack.demo} `)
    expect(policy).toContain(` ${stack.wallet} `)
    expect(response.headers.get('x-content-type-options')).toBe('nosniff')
    expect(response.headers.get('referrer-policy')).toBe('no-referrer')
  })
})
