// @vitest-environment happy-dom

import { createServer, request as httpRequest, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { connect, createClient, createMemoryStorage, injected } from '@latchkey/core'
import { createDevWallet } from '@latchkey/core/dev'
import { act, cleanup, render, screen, waitFor, within } from '@testing-library/react'
import userEvent from '@testing-library/user-event'
import { defineChain } from 'viem'
import { afterEach, expect, test } from 'vitest'
import { anvilKeys, testChains } from '../../../../test/chains.js'
import { createRecordingLogger } from '../../../../test/setup.js'
import { ConnectButton } from '../ConnectButton.js'
import { LatchkeyProvider } from '../LatchkeyProvider.js'

// The account modal's balance over an RPC node that is down, then back: a real HTTP server in front
// of the run's anvil that answers 503 while `down`, and forwards each request otherwise.

let server: Server | undefined
afterEach(() => {
  cleanup()
  server?.close()
  server = undefined
})

async function flakyNode(upstream: string) {
  const node = { down: true, url: '' }
  // The page's fetch is cross-origin here: the node answers CORS as anvil does.
  const cors = { 'access-control-allow-origin': '*', 'access-control-allow-headers': '*', 'access-control-allow-methods': 'POST, OPTIONS' }
  server = createServer(async (request, response) => {
    const chunks: Buffer[] = []
    for await (const chunk of request) chunks.push(chunk as Buffer)
    if (request.method === 'OPTIONS') return void response.writeHead(204, cors).end()
    if (node.down) return void response.writeHead(503, cors).end('down')
    const forwarded = httpRequest(upstream, { method: 'POST', headers: { 'content-type': 'application/json' } }, (answer) => {
      response.writeHead(answer.statusCode ?? 502, { ...cors, 'content-type': 'application/json' })
      answer.pipe(response)
    })
    forwarded.end(Buffer.concat(chunks))
  })
  await new Promise<void>((resolve) => server?.listen(0, '127.0.0.1', resolve))
  node.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  return node
}

test('error: a balance that failed to load shows "Balance unavailable" and "Try again", which loads it', async () => {
  const [anvil] = testChains()
  const node = await flakyNode(anvil.rpcUrls.default.http[0])
  const chain = defineChain({ ...anvil, rpcUrls: { default: { http: [node.url] } } })
  const wallet = createDevWallet({ privateKey: anvilKeys[5], chains: [anvil], approve: async () => true })
  const client = createClient({
    chains: [chain],
    storage: createMemoryStorage(),
    logger: createRecordingLogger(),
    window: new EventTarget(),
    connectors: [injected({ id: 'dev', name: 'Dev Wallet', provider: wallet })],
  })
  render(
    <LatchkeyProvider client={client}>
      <ConnectButton />
    </LatchkeyProvider>,
  )
  await act(() => connect(client, { connector: 'dev' }))
  await userEvent.click(screen.getByRole('button', { name: /^Account 0x/ }))
  const dialog = await screen.findByRole('dialog', { name: 'Account' })
  const balance = within(dialog).getByLabelText('Balance')
  // Loading: a skeleton, and the words for screen readers.
  expect([balance.getAttribute('aria-busy'), balance.querySelector('.lk-skeleton') !== null, balance.textContent]).toEqual(['true', true, 'Loading balance…'])
  await waitFor(() => expect(balance.textContent).toBe('Balance unavailable'), { timeout: 15_000 })
  expect(balance.getAttribute('aria-busy')).toBe('false')
  node.down = false
  await userEvent.click(within(dialog).getByRole('button', { name: 'Try again' }))
  await waitFor(() => expect(balance.textContent).toMatch(/^\d[\d,]*(\.\d+)? ETH$/), { timeout: 15_000 })
  expect(within(dialog).queryByRole('button', { name: 'Try again' })).toBeNull()
})
