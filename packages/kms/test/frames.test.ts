import { readdirSync } from 'node:fs'
import { getFreePort } from '@latchkey/devnet'
import { describe, expect, test } from 'vitest'
import { compiledFrames, compileFrames } from '../src/frames/build.js'
import { createFramesApp, createKms, FRAME_PAGES, framesContentSecurityPolicy } from '../src/index.js'
import { testDatabase } from './database.js'

// The frames' origin as served: pages, scripts, the stylesheet, and the headers that confine them.

const signerPublicKey = `04${'ab'.repeat(64)}`
const parentOrigins = ['http://localhost:5173', 'https://app.example']
const app = createFramesApp({ signerPublicKey, parentOrigins })

const expectedPolicy =
  "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'none'; connect-src 'none'; frame-ancestors http://localhost:5173 https://app.example; base-uri 'none'; form-action 'none'; require-trusted-types-for 'script'; trusted-types 'none'"

const securityHeaders = (response: Response) => ({
  csp: response.headers.get('content-security-policy'),
  nosniff: response.headers.get('x-content-type-options'),
  referrer: response.headers.get('referrer-policy'),
})

describe('pages', () => {
  test.each(FRAME_PAGES)('default: /%s is HTML with the CSP, nosniff and no-referrer', async (page) => {
    const response = await app.request(`/${page}`)
    expect(response.status).toBe(200)
    expect(response.headers.get('content-type')).toBe('text/html; charset=utf-8')
    expect(response.headers.get('cache-control')).toBe('no-store')
    expect(securityHeaders(response)).toEqual({ csp: expectedPolicy, nosniff: 'nosniff', referrer: 'no-referrer' })
    const html = await response.text()
    expect(html).toContain(`<meta name="latchkey-frame" content="${page}">`)
    expect(html).toContain('<meta name="latchkey-parent-origins" content="http://localhost:5173 https://app.example">')
    expect(html).toContain(`<meta name="latchkey-signer-public-key" content="${signerPublicKey}">`)
    expect(html).toContain(`<script type="module" src="/assets/${page}.js"></script>`)
    // No inline script or style: the CSP allows neither.
    expect(html.match(/<script/g)).toHaveLength(1)
    expect(html).not.toMatch(/<style|\sstyle=|\son[a-z]+=/)
  })

  test('behavior: the export frame labels the phrase; the import frame labels its field', async () => {
    const exportHtml = await (await app.request('/export')).text()
    expect(exportHtml).toContain('<h1 id="secret-label" class="label">Secret recovery phrase</h1>')
    expect(exportHtml).toContain('<ol id="words" class="words" aria-labelledby="secret-label" hidden></ol>')
    const importHtml = await (await app.request('/import')).text()
    expect(importHtml).toContain('<label id="secret-label" class="label" for="secret">Secret recovery phrase</label>')
    const keyHtml = await (await app.request('/import?secret=private-key')).text()
    expect(keyHtml).toContain('<label id="secret-label" class="label" for="secret">Private key</label>')
  })

  test('behavior: no parent origins means no embedding at all', async () => {
    const closed = createFramesApp({ signerPublicKey, parentOrigins: [] })
    expect((await closed.request('/auth')).headers.get('content-security-policy')).toContain("frame-ancestors 'none';")
    expect(framesContentSecurityPolicy([])).toBe(expectedPolicy.replace('http://localhost:5173 https://app.example', "'none'"))
  })

  test('error: anything else is 404, with the same headers', async () => {
    for (const path of ['/', '/auth/', '/assets/missing.js', '/assets/../src/index.ts', '/.well-known/latchkey-kms-signer.json']) {
      const response = await app.request(path)
      expect({ path, status: response.status }).toEqual({ path, status: 404 })
      expect(securityHeaders(response)).toEqual({ csp: expectedPolicy, nosniff: 'nosniff', referrer: 'no-referrer' })
    }
    expect((await app.request('/auth', { method: 'POST' })).status).toBe(404)
  })

  test('error: parent origins must be origins; the signer key must be an uncompressed point', () => {
    expect(() => createFramesApp({ signerPublicKey, parentOrigins: ['http://localhost:5173/'] })).toThrowErrorMatchingInlineSnapshot(
      `[Error: frames.parentOrigins: "http://localhost:5173/" is not an origin like https://app.example or http://localhost:5173]`,
    )
    expect(() => createFramesApp({ signerPublicKey, parentOrigins: ['*'] })).toThrow('frames.parentOrigins: "*" is not an origin')
    expect(() => createFramesApp({ signerPublicKey, parentOrigins: ["http://a.example 'unsafe-inline'"] })).toThrow('is not an origin')
    expect(() => createFramesApp({ signerPublicKey: '02abcd', parentOrigins })).toThrow('signerPublicKey must be an uncompressed P-256 public key in hex')
  })
})

describe('the consent frame’s configuration', () => {
  const chains = [
    { id: 31337, rpcUrl: 'http://127.0.0.1:8545' },
    { id: 31338, rpcUrl: 'http://127.0.0.1:8546/' },
    { id: 11155111, rpcUrl: 'https://rpc.example/v2/key' },
    { id: 1, rpcUrl: 'https://rpc.example/v2/other' },
  ]
  const executor = '0x449a683E064Cb89Ff9d5B37879785a7a852f9D43'
  const configured = createFramesApp({ signerPublicKey, parentOrigins, chains, executor })

  test('default: the consent page may connect to the configured RPC origins and nothing else; the other pages to nothing', async () => {
    const response = await configured.request('/consent')
    expect(securityHeaders(response).csp).toBe(
      expectedPolicy.replace("connect-src 'none'", 'connect-src http://127.0.0.1:8545 http://127.0.0.1:8546 https://rpc.example'),
    )
    const html = await response.text()
    expect(html).toContain(
      '<meta name="latchkey-chains" content="31337=http://127.0.0.1:8545 31338=http://127.0.0.1:8546/ 11155111=https://rpc.example/v2/key 1=https://rpc.example/v2/other">',
    )
    expect(html).toContain(`<meta name="latchkey-executor" content="${executor}">`)
    for (const page of FRAME_PAGES.filter((name) => name !== 'consent')) {
      const other = await configured.request(`/${page}`)
      expect({ page, csp: securityHeaders(other).csp }).toEqual({ page, csp: expectedPolicy })
      expect(await other.text()).not.toContain('latchkey-chains')
    }
    expect(securityHeaders(await configured.request('/assets/consent.js')).csp).toBe(expectedPolicy)
  })

  test('behavior: the app’s paymasters and name are written into the consent page only, escaped', async () => {
    const paymasters = [
      { chainId: 31337, kind: 'sponsor', address: '0x5050505050505050505050505050505050505050' },
      { chainId: 31337, kind: 'token', address: '0x7070707070707070707070707070707070707070' },
    ] as const
    const named = createFramesApp({ signerPublicKey, parentOrigins, paymasters, appName: 'Demo "App" <b>' })
    const html = await (await named.request('/consent')).text()
    expect(html).toContain(
      '<meta name="latchkey-paymasters" content="31337=sponsor:0x5050505050505050505050505050505050505050 31337=token:0x7070707070707070707070707070707070707070">',
    )
    expect(html).toContain('<meta name="latchkey-app-name" content="Demo &#34;App&#34; &#60;b&#62;">')
    expect(await (await named.request('/export')).text()).not.toContain('latchkey-paymasters')
  })

  test('error: a paymaster needs a chain id, a kind and an address, one of each kind per chain; the app name is 1 to 64 printable characters', () => {
    const sponsor = { chainId: 31337, kind: 'sponsor', address: '0x5050505050505050505050505050505050505050' } as const
    for (const paymaster of [
      { ...sponsor, chainId: 0 },
      { ...sponsor, kind: 'bundler' },
      { ...sponsor, address: '0x1234' },
    ])
      expect(() => createFramesApp({ signerPublicKey, parentOrigins, paymasters: [paymaster as typeof sponsor] })).toThrow(
        `frames.paymasters: ${JSON.stringify(paymaster)} is not a chain id, a kind (sponsor or token) and an address`,
      )
    expect(() =>
      createFramesApp({ signerPublicKey, parentOrigins, paymasters: [sponsor, { ...sponsor, address: '0x7070707070707070707070707070707070707070' }] }),
    ).toThrow('frames.paymasters: chain 31337 names two sponsor paymasters')
    for (const appName of ['', ' ', 'x'.repeat(65), 'Demo\u202eApp'])
      expect(() => createFramesApp({ signerPublicKey, parentOrigins, appName })).toThrow(
        `frames.appName: ${JSON.stringify(appName)} is not a name of 1 to 64 printable characters`,
      )
  })

  test('behavior: without chains the consent page connects nowhere and names no executor', async () => {
    const response = await app.request('/consent')
    expect(securityHeaders(response).csp).toBe(expectedPolicy)
    const html = await response.text()
    expect(html).toContain('<meta name="latchkey-chains" content="">')
    expect(html).toContain('<meta name="latchkey-executor" content="">')
  })

  test('error: a chain needs a positive id and an http(s) RPC url; the executor is an address', () => {
    for (const chain of [
      { id: 0, rpcUrl: 'http://127.0.0.1:8545' },
      { id: 1.5, rpcUrl: 'http://127.0.0.1:8545' },
      { id: 1, rpcUrl: 'ws://127.0.0.1:8545' },
      { id: 1, rpcUrl: "http://a.example 'unsafe-inline'" },
      { id: 1, rpcUrl: 'not a url' },
    ])
      expect(() => createFramesApp({ signerPublicKey, parentOrigins, chains: [chain] })).toThrow(
        `frames.chains: ${JSON.stringify(chain)} is not a chain id with an http(s) RPC url`,
      )
    expect(() => createFramesApp({ signerPublicKey, parentOrigins, executor: '0x1234' })).toThrow('frames.executor: "0x1234" is not an address')
  })
})

describe('assets', () => {
  // Bundled once for the file: the page scripts with their audited dependencies.
  const compiled = compileFrames()

  test('default: every compiled module and the stylesheet, with their types', async () => {
    const files = readdirSync(compiledFrames).sort()
    expect(files).toEqual([...(await compiled).keys(), 'frames.css'].sort())
    for (const file of files) {
      const response = await app.request(`/assets/${file}`)
      expect(response.status).toBe(200)
      expect(response.headers.get('content-type')).toBe(file.endsWith('.css') ? 'text/css; charset=utf-8' : 'text/javascript; charset=utf-8')
      expect(securityHeaders(response)).toEqual({ csp: expectedPolicy, nosniff: 'nosniff', referrer: 'no-referrer' })
    }
  })

  test('behavior: frames/*.js is what src/frames/browser compiles to (run npm run build:frames -w @latchkey/kms)', async () => {
    for (const [file, text] of await compiled) expect(await (await app.request(`/assets/${file}`)).text(), file).toBe(text)
  })

  test('behavior: the scripts fetch nothing and write no HTML, bundled libraries included; only the consent page reaches the RPC', async () => {
    for (const [file, text] of await compiled)
      expect({ file, sinks: text.match(/\bfetch\b|XMLHttpRequest|innerHTML|outerHTML|insertAdjacentHTML|document\.write|eval\(|new Function/g) }).toEqual({
        file,
        // The consent frame reads the chains the kms configured for it (consentConfig.ts), and its CSP lets it reach those RPC origins only.
        sinks: file === 'consent.js' ? ['fetch'] : null,
      })
  })
})

describe('createKms({ frames })', () => {
  test('default: serves the frames on their own port at http://localhost:<port>, stops with the kms', async () => {
    const framesPort = await getFreePort()
    const kms = createKms({ port: await getFreePort(), ...(await testDatabase()), frames: { port: framesPort, parentOrigins: ['http://localhost:5173'] } })
    expect(kms.framesUrl).toBe(`http://localhost:${framesPort}`)
    await kms.start()
    try {
      const response = await fetch(`${kms.framesUrl}/export`)
      expect(response.status).toBe(200)
      expect(response.headers.get('content-security-policy')).toContain('frame-ancestors http://localhost:5173;')
      expect(await response.text()).toContain(`<meta name="latchkey-signer-public-key" content="${kms.signerPublicKey}">`)
      // The API stays on its own origin; the frames are not served there.
      expect((await fetch(`${kms.url}/export`)).status).toBe(404)
    } finally {
      await kms.stop()
    }
    await expect(fetch(`http://127.0.0.1:${framesPort}/export`)).rejects.toThrow('fetch failed')
  })

  test('behavior: without frames there is no frames URL', async () => {
    const kms = createKms(await testDatabase())
    expect(kms.framesUrl).toBeUndefined()
    await kms.stop()
  })

  test('error: a taken frames port fails start and leaves the API port free', async () => {
    const framesPort = await getFreePort()
    const apiPort = await getFreePort()
    const holder = createKms({ port: await getFreePort(), ...(await testDatabase()), frames: { port: framesPort, parentOrigins: [] } })
    await holder.start()
    try {
      const kms = createKms({ port: apiPort, ...(await testDatabase()), frames: { port: framesPort, parentOrigins: [] } })
      await expect(kms.start()).rejects.toMatchObject({ code: 'EADDRINUSE', port: framesPort })
      await kms.stop()
      const again = createKms({ port: apiPort, ...(await testDatabase()) })
      await again.start()
      await again.stop()
    } finally {
      await holder.stop()
    }
  })
})
