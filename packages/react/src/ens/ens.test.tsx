// @vitest-environment happy-dom

import { createServer, request as httpRequest, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { connect, createClient, createMemoryStorage, injected, type SignInAdapter } from '@latchkey/core'
import { createDevWallet } from '@latchkey/core/dev'
import { cleanup, fireEvent, render, screen, waitFor, within } from '@testing-library/react'
import userEvent from '@testing-library/user-event'
import { type Address, decodeFunctionData, defineChain, encodeErrorResult, encodeFunctionResult, type Hex, hexToString, parseAbi } from 'viem'
import { privateKeyToAddress } from 'viem/accounts'
import { mainnet } from 'viem/chains'
import { afterAll, afterEach, beforeAll, describe, expect, test } from 'vitest'
import { anvilKeys, testChains } from '../../../../test/chains.js'
import { createRecordingLogger } from '../../../../test/setup.js'
import { ConnectButton } from '../ConnectButton.js'
import { LatchkeyProvider } from '../LatchkeyProvider.js'

// No package of ENS's own contracts with the universal resolver is served here
// (`npm view @ensdomains/ens-contracts` answers nothing; @ensdomains/ens 0.6.2 predates the
// universal resolver), so the resolution path runs against mainnet-shaped fixtures: an RPC node
// that answers the universal resolver's two calls at mainnet's address as mainnet does (a name, or
// the ResolverNotFound revert), and forwards every other request to the run's anvil.

const universalResolver = mainnet.contracts.ensUniversalResolver.address
const abi = parseAbi([
  'function reverseWithGateways(bytes reverseName, uint256 coinType, string[] gateways) view returns (string resolvedName, address resolver, address reverseResolver)',
  'function resolveWithGateways(bytes name, bytes data, string[] gateways) view returns (bytes, address)',
  'function text(bytes32 node, string key) view returns (string)',
  'error ResolverNotFound(bytes name)',
])
const resolver = '0x231b0Ee14048e9dCcD1d247744d114a4EB5E8E63'

// Closed after the file: a read the page had in flight when a test ended finds its node still up.
const servers: Server[] = []
afterEach(cleanup)
afterAll(() => {
  for (const server of servers) server.close()
})

/** A DNS-encoded name (`\x05alice\x03eth\x00`) back to `alice.eth`. */
function dnsDecode(bytes: Hex): string {
  const text = hexToString(bytes)
  const labels: string[] = []
  for (let at = 0; at < text.length && text.charCodeAt(at) !== 0; ) {
    const length = text.charCodeAt(at)
    labels.push(text.slice(at + 1, at + 1 + length))
    at += 1 + length
  }
  return labels.join('.')
}

/** The fixture node: `names` by address, `avatars` (text record) by name; `/image.png` is an image, `/page` is not. */
async function ensNode(upstream: string, names: Record<string, string>, avatars: Record<string, string>) {
  const node = { url: '', calls: [] as string[], heads: [] as string[] }
  const cors = { 'access-control-allow-origin': '*', 'access-control-allow-headers': '*', 'access-control-allow-methods': 'POST, HEAD, OPTIONS' }
  const server = createServer(async (request, response) => {
    if (request.method === 'OPTIONS') return void response.writeHead(204, cors).end()
    if (request.method === 'HEAD') {
      node.heads.push(request.url ?? '')
      return void response.writeHead(200, { ...cors, 'content-type': request.url === '/image.png' ? 'image/png' : 'text/html' }).end()
    }
    const chunks: Buffer[] = []
    for await (const chunk of request) chunks.push(chunk as Buffer)
    const body = JSON.parse(Buffer.concat(chunks).toString()) as { id: number; method: string; params: [{ to?: string; data?: Hex }] }
    const call = body.method === 'eth_call' ? body.params[0] : undefined
    if (call?.to?.toLowerCase() === universalResolver.toLowerCase() && call.data) {
      const answer = (result: Hex) =>
        response.writeHead(200, { ...cors, 'content-type': 'application/json' }).end(JSON.stringify({ jsonrpc: '2.0', id: body.id, result }))
      const revert = (data: Hex) =>
        response
          .writeHead(200, { ...cors, 'content-type': 'application/json' })
          .end(JSON.stringify({ jsonrpc: '2.0', id: body.id, error: { code: 3, message: 'execution reverted', data } }))
      const decoded = decodeFunctionData({ abi, data: call.data })
      if (decoded.functionName === 'reverseWithGateways') {
        const address = decoded.args[0].toLowerCase()
        node.calls.push(`reverse ${address}`)
        const name = names[address]
        if (!name) return void revert(encodeErrorResult({ abi, errorName: 'ResolverNotFound', args: [decoded.args[0]] }))
        return void answer(encodeFunctionResult({ abi, functionName: 'reverseWithGateways', result: [name, resolver, resolver] }))
      }
      if (decoded.functionName === 'resolveWithGateways') {
        const name = dnsDecode(decoded.args[0])
        const text = decodeFunctionData({ abi, data: decoded.args[1] })
        node.calls.push(`text ${name} ${text.functionName === 'text' ? text.args[1] : text.functionName}`)
        const value = (avatars[name] ?? '').replace('{node}', node.url)
        return void answer(
          encodeFunctionResult({
            abi,
            functionName: 'resolveWithGateways',
            result: [encodeFunctionResult({ abi, functionName: 'text', result: value }), resolver],
          }),
        )
      }
    }
    const forwarded = httpRequest(upstream, { method: 'POST', headers: { 'content-type': 'application/json' } }, (answer) => {
      response.writeHead(answer.statusCode ?? 502, { ...cors, 'content-type': 'application/json' })
      answer.pipe(response)
    })
    forwarded.end(Buffer.concat(chunks))
  })
  servers.push(server)
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  node.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  return node
}

// Each test its own account, so the page-wide ENS cache of one test does not answer another (they send nothing: no nonce is shared).
const accounts = anvilKeys.slice(5, 10).map((key) => ({ key, address: privateKeyToAddress(key) }))

async function setup(
  index: number,
  {
    names = {},
    avatars = {},
    ens = true,
    signIn,
  }: { names?: Record<string, string>; avatars?: Record<string, string>; ens?: boolean; signIn?: SignInAdapter } = {},
) {
  const [anvil, other] = testChains()
  const { key, address } = accounts[index]!
  const node = await ensNode(anvil.rpcUrls.default.http[0], names, avatars)
  // Anvil A, mainnet-shaped where ENS is concerned: mainnet's universal resolver, reached through the fixture node.
  const chain = defineChain({
    ...anvil,
    rpcUrls: { default: { http: [node.url] } },
    contracts: ens ? { ensUniversalResolver: mainnet.contracts.ensUniversalResolver } : {},
  })
  const wallet = createDevWallet({ privateKey: key, chains: [chain, other] })
  const logger = createRecordingLogger()
  const client = createClient({
    chains: [chain, other],
    storage: createMemoryStorage(),
    logger,
    window: new EventTarget(),
    connectors: [injected({ id: 'dev', name: 'Dev Wallet', provider: wallet })],
    signIn,
  })
  await connect(client, { connector: 'dev' })
  render(
    <LatchkeyProvider client={client} theme="light">
      <ConnectButton />
    </LatchkeyProvider>,
  )
  return { node, logger, client, address, button: screen.getByRole('button', { name: `Account ${address.slice(0, 6)}…${address.slice(-4)}` }) }
}

const short = (address: Address) => `${address.slice(0, 6)}…${address.slice(-4)}`

describe('ENS', () => {
  beforeAll(() => {
    expect(universalResolver).toBe('0xeeeeeeee14d718c2b47d9923deab1335e144eeee')
  })

  test('default: the button and the account modal show the ENS name and avatar', async () => {
    const { address } = accounts[0]!
    const { node, button, logger } = await setup(0, { names: { [address.toLowerCase()]: 'ada.eth' }, avatars: { 'ada.eth': '{node}/image.png' } })
    await waitFor(() => expect(button.textContent).toBe('Anvil Aada.eth'), { timeout: 10_000 })
    expect(button.querySelector('img')?.getAttribute('src')).toBe(`${node.url}/image.png`)
    await userEvent.click(button)
    const dialog = await screen.findByRole('dialog', { name: 'Account' })
    const identity = within(dialog).getByRole('group', { name: 'Signed-in user' })
    await waitFor(() => expect(identity.textContent).toBe('ada.eth'))
    expect(identity.querySelector('img')?.getAttribute('src')).toBe(`${node.url}/image.png`)
    // Asked once for the button and the modal: cached per chain and address.
    expect(node.calls).toEqual([`reverse ${address.toLowerCase()}`, 'text ada.eth avatar'])
    expect(node.heads).toEqual(['/image.png'])
    expect([logger.warnings, logger.errors]).toEqual([[], []])
  })

  test('error: an avatar that is not an image, or that fails to load, shows the monogram', async () => {
    const { address } = accounts[1]!
    const { button } = await setup(1, { names: { [address.toLowerCase()]: 'bea.eth' }, avatars: { 'bea.eth': '{node}/page' } })
    await waitFor(() => expect(button.textContent).toBe('Anvil Abea.eth'), { timeout: 10_000 })
    expect(button.querySelector('img')).toBe(null)
    await userEvent.click(button)
    const identity = within(await screen.findByRole('dialog', { name: 'Account' })).getByRole('group', { name: 'Signed-in user' })
    await waitFor(() => expect(identity.textContent).toBe('bea.eth'))
    const monogram = decodeURIComponent(identity.querySelector('img')?.getAttribute('src') ?? '')
    expect(monogram).toMatch(/^data:image\/svg\+xml,<svg .*>B<\/text><\/svg>$/)
  })

  test('error: an avatar that passes as an image but fails to load shows the monogram in the modal and none in the button', async () => {
    const { address } = accounts[2]!
    const { button, node } = await setup(2, { names: { [address.toLowerCase()]: 'cy.eth' }, avatars: { 'cy.eth': '{node}/image.png' } })
    await waitFor(() => expect(button.querySelector('img')?.getAttribute('src')).toBe(`${node.url}/image.png`), { timeout: 10_000 })
    fireEvent.error(button.querySelector('img') as HTMLImageElement)
    expect(button.querySelector('img')).toBe(null)
    expect(button.textContent).toBe('Anvil Acy.eth')
    await userEvent.click(button)
    const identity = within(await screen.findByRole('dialog', { name: 'Account' })).getByRole('group', { name: 'Signed-in user' })
    await waitFor(() => expect(identity.querySelector('img')?.getAttribute('src')).toBe(`${node.url}/image.png`))
    fireEvent.error(identity.querySelector('img') as HTMLImageElement)
    expect(decodeURIComponent(identity.querySelector('img')?.getAttribute('src') ?? '')).toMatch(/^data:image\/svg\+xml,<svg .*>C<\/text><\/svg>$/)
  })

  test('behavior: an address without a name shows its short address; a chain without ENS asks nothing and logs nothing', async () => {
    const { button, node, logger, address } = await setup(3)
    await waitFor(() => expect(node.calls).toEqual([`reverse ${address.toLowerCase()}`]), { timeout: 10_000 })
    expect(button.textContent).toBe(`Anvil A${short(address)}`)
    cleanup()
    const without = await setup(4, { ens: false, names: { [accounts[4]!.address.toLowerCase()]: 'dee.eth' } })
    await userEvent.click(without.button)
    const identity = within(await screen.findByRole('dialog', { name: 'Account' })).getByRole('group', { name: 'Signed-in user' })
    await waitFor(() => expect(within(screen.getByRole('dialog')).getByLabelText('Balance').textContent).toMatch(/ ETH$/))
    expect(identity.textContent).toBe(short(without.address))
    expect(without.button.textContent).toBe(`Anvil A${short(without.address)}`)
    expect(without.node.calls).toEqual([])
    expect([without.logger.warnings, without.logger.errors, logger.warnings, logger.errors]).toEqual([[], [], [], []])
  })
})
