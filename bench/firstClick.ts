/**
 * The first click on Connect as Chromium sees it: serves a built bench app with every file
 * gzip-encoded (level 9, as `bench:size` estimates), loads it, clicks the connect button and sums
 * the encoded bodies of the JS and CSS requested from the click on (the button's hover warm-up
 * included) until the modal is open and nothing is in flight. Used by `bench:size -- --browser`.
 */
import { readFile } from 'node:fs/promises'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { extname, join, normalize } from 'node:path'
import { gzipSync } from 'node:zlib'
import { chromium, type Request } from 'playwright-core'
import { chromiumLaunchOptions } from '../test/chromium.js'

const types: Record<string, string> = { '.html': 'text/html', '.js': 'text/javascript', '.css': 'text/css', '.svg': 'image/svg+xml' }

/**
 * @example
 * const { files, bytes } = await measureFirstClick('bench/.out/latchkey')
 */
export async function measureFirstClick(outDir: string): Promise<{ files: string[]; bytes: number }> {
  const server = createServer((request, response) => {
    const path = normalize(new URL(request.url ?? '/', 'http://bench').pathname).replace(/^(\.\.[/\\])+/, '')
    readFile(join(outDir, path === '/' ? 'index.html' : path)).then(
      (body) => {
        const encoded = gzipSync(body, { level: 9 })
        // A known length, so no chunked framing adds to the measured body.
        response.writeHead(200, {
          'content-type': types[extname(path)] ?? 'text/html',
          'content-encoding': 'gzip',
          'content-length': encoded.length,
          'cache-control': 'no-store',
        })
        response.end(encoded)
      },
      () => response.writeHead(404).end(),
    )
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const browser = await chromium.launch(chromiumLaunchOptions)
  try {
    const page = await browser.newPage()
    await page.goto(`http://127.0.0.1:${(server.address() as AddressInfo).port}/`)
    const button = page.getByRole('button', { name: 'Connect Wallet' })
    await button.waitFor()
    const requested: Request[] = []
    const inFlight = new Set<Request>()
    let settle: (() => void) | undefined
    const done = (request: Request) => {
      inFlight.delete(request)
      if (inFlight.size === 0) settle?.()
    }
    page.on('request', (request) => {
      requested.push(request)
      inFlight.add(request)
    })
    page.on('requestfinished', done)
    page.on('requestfailed', done)
    await button.click()
    await page.getByRole('dialog', { name: 'Connect a wallet' }).waitFor()
    if (inFlight.size > 0) await new Promise<void>((resolve) => (settle = resolve))
    const assets = requested.filter((request) => /\.(js|css)$/.test(new URL(request.url()).pathname))
    let bytes = 0
    for (const request of assets) bytes += (await request.sizes()).responseBodySize
    return { files: assets.map((request) => new URL(request.url()).pathname.slice(1)).sort(), bytes }
  } finally {
    await browser.close()
    await new Promise((resolve) => server.close(resolve))
  }
}
