/**
 * The kms's consent frame in Chromium on a local anvil: how long from the app page posting
 * REVIEW_AND_STAMP to the dialog visible, and to the simulation's result shown.
 *
 * - eth_sendTransaction (1 ETH to another account, gas and fees filled as the wallet fills them):
 *   the payload checked, the fee and the call decoded, then `eth_simulateV1` on the frame's
 *   configured RPC (`--frames-chain`);
 * - personal_sign (the reference): the same frame and channel, no chain reads.
 *
 * The times are the pages' own, on one clock (epoch milliseconds: `performance.timeOrigin + now()`
 * in the app page and in the frame): from just before the app posts the request to the first
 * animation frame after the dialog is shown (and after the simulation's text replaces
 * "Simulating…"). Each request is then rejected with a trusted click on "Reject". Interleaved run
 * by run; median and p90. Targets (issue 25): dialog ≤ 150 ms, simulation ≤ 300 ms (p50). Not
 * asserted anywhere.
 *
 *   npm run bench:consent [-- --runs 30]
 */
import { createServer } from 'node:http'
import { anvil, BATCH_EXECUTOR_ADDRESS, getFreePort } from '@latchkey/devnet'
import { createKms } from '@latchkey/kms'
import { chromium, type Frame, type Page } from 'playwright-core'
import { hashMessage, parseEther, parseGwei, serializeTransaction } from 'viem'
import { chromiumLaunchOptions } from '../test/chromium.js'

const index = process.argv.indexOf('--runs')
const runs = index > 0 ? Number(process.argv[index + 1]) : 30
if (!Number.isInteger(runs) || runs < 1) throw new Error('--runs must be a positive whole number')
const TARGETS = { dialog: 150, simulation: 300 }

/** anvil's first funded account, and its second as the recipient. */
const account = '0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266'
const recipient = '0x70997970C51812dc3A010C7d01b50e0d17dc79C8'
const chainId = 31337

const activity = (type: string, parameters: Record<string, unknown>) =>
  JSON.stringify({ type, timestampMs: String(Date.now()), organizationId: 'bench', parameters })
const requests = {
  transaction: {
    request: { method: 'eth_sendTransaction', params: [{ from: account, to: recipient, value: '0xde0b6b3a7640000' }] },
    payload: activity('ACTIVITY_TYPE_SIGN_TRANSACTION_V2', {
      signWith: account,
      type: 'TRANSACTION_TYPE_ETHEREUM',
      unsignedTransaction: serializeTransaction({
        type: 'eip1559',
        chainId,
        to: recipient,
        value: parseEther('1'),
        nonce: 0,
        gas: 21_000n,
        maxFeePerGas: parseGwei('2'),
        maxPriorityFeePerGas: parseGwei('1'),
      }).slice(2),
    }),
  },
  message: {
    request: { method: 'personal_sign', params: ['Sign in to the bench', account] },
    payload: activity('ACTIVITY_TYPE_SIGN_RAW_PAYLOAD_V2', {
      signWith: account,
      payload: hashMessage('Sign in to the bench'),
      encoding: 'PAYLOAD_ENCODING_HEXADECIMAL',
      hashFunction: 'HASH_FUNCTION_NO_OP',
    }),
  },
}

const appHtml = `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>App</title>
<script type="module">
window.openConsent = (framesUrl) => new Promise((resolve) => {
  const iframe = document.createElement('iframe')
  iframe.src = framesUrl + '/consent'
  iframe.style.cssText = 'width: 480px; height: 640px; border: 0'
  const channel = new MessageChannel()
  const waiting = new Map()
  channel.port1.onmessage = (event) => {
    if (event.data.type === 'PUBLIC_KEY_READY') return resolve(true)
    waiting.get(event.data.requestId)?.(event.data)
  }
  window.ask = (requestId, value) => {
    const answer = new Promise((done) => waiting.set(requestId, done))
    const sentAt = performance.timeOrigin + performance.now()
    channel.port1.postMessage({ type: 'REVIEW_AND_STAMP', requestId, value })
    return { sentAt, answer }
  }
  iframe.addEventListener('load', () => iframe.contentWindow.postMessage({ type: 'TURNKEY_INIT_MESSAGE_CHANNEL' }, new URL(framesUrl).origin, [channel.port2]), { once: true })
  document.body.append(iframe)
})
</script></head><body></body></html>`

/** In the frame: the epoch time of the first animation frame after the dialog shows, and after the simulation's text arrives. */
function watchDialog(frame: Frame) {
  // A string, not a function: the bench runs under tsx, whose helpers a function would carry into the page.
  return frame.evaluate(`(() => {
    window.shownAt = undefined
    window.simulatedAt = undefined
    const dialog = document.getElementById('review')
    const simulation = document.getElementById('review-simulation')
    const stamp = (key) => requestAnimationFrame(() => { window[key] ??= performance.timeOrigin + performance.now() })
    new MutationObserver(() => {
      if (dialog.hidden) return
      if (window.shownAt === undefined) stamp('shownAt')
      const text = simulation.textContent ?? ''
      if (text !== '' && text !== 'Simulating…' && window.simulatedAt === undefined) stamp('simulatedAt')
    }).observe(dialog, { attributes: true, childList: true, characterData: true, subtree: true })
  })()`)
}

async function measure(page: Page, frame: Frame, kind: keyof typeof requests, run: number) {
  await watchDialog(frame)
  const { request, payload } = requests[kind]
  const sentAt = await page.evaluate(
    ({ requestId, value }) => {
      const asked = (window as unknown as { ask(id: string, value: unknown): { sentAt: number; answer: Promise<unknown> } }).ask(requestId, value)
      ;(window as unknown as { answer: Promise<unknown> }).answer = asked.answer
      return asked.sentAt
    },
    { requestId: `${kind}-${run}`, value: { request, payload, context: { account, chainId } } },
  )
  await frame.waitForFunction((withSimulation) => {
    const state = window as unknown as { shownAt?: number | undefined; simulatedAt?: number | undefined }
    return state.shownAt !== undefined && (!withSimulation || state.simulatedAt !== undefined)
  }, kind === 'transaction')
  const { shownAt, simulatedAt, simulation } = await frame.evaluate(() => ({
    ...(window as unknown as { shownAt: number; simulatedAt?: number }),
    simulation: document.getElementById('review-simulation')?.textContent ?? '',
  }))
  await frame.getByRole('button', { name: 'Reject' }).click()
  const answer = (await page.evaluate(() => (window as unknown as { answer: Promise<{ type: string; value: { code?: number } }> }).answer)) as {
    type: string
    value: { code?: number }
  }
  if (answer.type !== 'ERROR' || answer.value.code !== 4001) throw new Error(`${kind} run ${run}: expected 4001, got ${JSON.stringify(answer)}`)
  return { dialog: shownAt - sentAt, simulation: simulatedAt === undefined ? undefined : simulatedAt - sentAt, text: simulation }
}

const quantile = (values: number[], q: number) => {
  const sorted = [...values].sort((a, b) => a - b)
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!
}
const ms = (value: number) => `${value.toFixed(1)} ms`

const chain = anvil({ name: 'bench anvil', port: await getFreePort(), chainId })
await chain.start()
const appPort = await getFreePort()
const appOrigin = `http://localhost:${appPort}`
const kms = createKms({
  port: await getFreePort(),
  databasePath: ':memory:',
  frames: { port: await getFreePort(), parentOrigins: [appOrigin], chains: [{ id: chainId, rpcUrl: chain.url }], executor: BATCH_EXECUTOR_ADDRESS },
})
await kms.start()
const app = createServer((_request, response) => {
  response.writeHead(200, { 'content-type': 'text/html' })
  response.end(appHtml)
})
await new Promise<void>((resolve) => app.listen(appPort, 'localhost', resolve))
const browser = await chromium.launch(chromiumLaunchOptions)
try {
  const page = await browser.newPage()
  await page.goto(appOrigin)
  await page.evaluate((framesUrl) => (window as unknown as { openConsent(url: string): Promise<boolean> }).openConsent(framesUrl), kms.framesUrl!)
  const frame = page.frames().find((candidate) => candidate.url().endsWith('/consent'))
  if (!frame) throw new Error('the consent frame did not load')
  // One of each first, not counted: the first request loads the signing key and warms the caches.
  const warm = await measure(page, frame, 'transaction', 0)
  await measure(page, frame, 'message', 0)
  console.log(`simulation shown: "${warm.text}"`)
  const figures = { transactionDialog: [] as number[], transactionSimulation: [] as number[], messageDialog: [] as number[] }
  for (let run = 1; run <= runs; run++) {
    const transaction = await measure(page, frame, 'transaction', run)
    const message = await measure(page, frame, 'message', run)
    figures.transactionDialog.push(transaction.dialog)
    figures.transactionSimulation.push(transaction.simulation!)
    figures.messageDialog.push(message.dialog)
  }
  console.log(`\nConsent frame, ${runs} runs each, interleaved (from REVIEW_AND_STAMP posted by the app page to the first frame showing it)\n`)
  console.log(['figure'.padEnd(40), 'p50'.padStart(10), 'p90'.padStart(10), 'target'.padStart(10)].join('  '))
  const row = (name: string, values: number[], target?: number) =>
    console.log(
      [name.padEnd(40), ms(quantile(values, 0.5)).padStart(10), ms(quantile(values, 0.9)).padStart(10), (target ? `≤ ${target} ms` : '').padStart(10)].join(
        '  ',
      ),
    )
  row('personal_sign: dialog (reference)', figures.messageDialog)
  row('eth_sendTransaction: dialog', figures.transactionDialog, TARGETS.dialog)
  row('eth_sendTransaction: simulation shown', figures.transactionSimulation, TARGETS.simulation)
  console.log(
    `\ntransaction dialog − message dialog (p50): ${ms(quantile(figures.transactionDialog, 0.5) - quantile(figures.messageDialog, 0.5))}: the payload check, the fee and the decoding`,
  )
} finally {
  await browser.close()
  await new Promise((resolve) => app.close(resolve))
  await kms.stop()
  await chain.stop()
}
