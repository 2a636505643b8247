// @vitest-environment happy-dom

import { connect, createClient, createMemoryStorage, injected } from '@latchkey/core'
import { createDevWallet } from '@latchkey/core/dev'
import { act, cleanup, render, screen, waitFor, within } from '@testing-library/react'
import userEvent from '@testing-library/user-event'
import { createPublicClient, http, parseEther, toHex } from 'viem'
import { generatePrivateKey, privateKeyToAddress } from 'viem/accounts'
import { afterEach, beforeAll, describe, expect, test } from 'vitest'
import { testChains } from '../../../../test/chains.js'
import { createRecordingLogger } from '../../../../test/setup.js'
import { useSendCalls } from '../hooks/useSendCalls.js'
import { useSendTransaction } from '../hooks/useSendTransaction.js'
import { LatchkeyProvider } from '../LatchkeyProvider.js'

// The toasts over a real dev wallet on anvil: a fresh funded key keeps nonces apart.
const key = generatePrivateKey()
const chains = testChains()
const chainA = createPublicClient({ transport: http(chains[0].rpcUrls.default.http[0]) })
// A contract that always reverts (PUSH1 0 PUSH1 0 REVERT), put on chain by anvil.
const reverter = privateKeyToAddress(generatePrivateKey())
beforeAll(async () => {
  await chainA.request({ method: 'anvil_setBalance' as never, params: [privateKeyToAddress(key), toHex(10n ** 20n)] as never })
  await chainA.request({ method: 'anvil_setCode' as never, params: [reverter, '0x60006000fd'] as never })
})
afterEach(cleanup)

const bob = privateKeyToAddress(generatePrivateKey())

async function setup({ approve, toasts, locale }: { approve?: () => Promise<boolean>; toasts?: boolean; locale?: string } = {}) {
  // The wallet asks only about sending: connecting is approved.
  const wallet = createDevWallet({ privateKey: key, chains, approve: async ({ method }) => (approve && method === 'eth_sendTransaction' ? approve() : true) })
  const client = createClient({
    chains,
    storage: createMemoryStorage(),
    logger: createRecordingLogger(),
    window: new EventTarget(),
    connectors: [injected({ id: 'dev', name: 'Dev Wallet', provider: wallet })],
  })
  await connect(client, { connector: 'dev' })
  const sent: { hash?: string; error?: unknown } = {}
  function App() {
    const transaction = useSendTransaction()
    const calls = useSendCalls()
    return (
      <>
        <button
          type="button"
          onClick={() =>
            transaction.sendTransaction({ to: bob, value: 1n }).then(
              (hash) => (sent.hash = hash),
              (error) => (sent.error = error),
            )
          }
        >
          send
        </button>
        <button type="button" onClick={() => void transaction.sendTransaction({ to: reverter, gas: 100_000n }).catch(() => {})}>
          revert
        </button>
        <button
          type="button"
          onClick={() =>
            void calls
              .sendCalls({
                calls: [
                  { to: bob, value: parseEther('0.001') },
                  { to: bob, value: parseEther('0.001') },
                ],
              })
              .catch(() => {})
          }
        >
          batch
        </button>
      </>
    )
  }
  render(
    <LatchkeyProvider client={client} theme="dark" toasts={toasts} locale={locale}>
      <App />
    </LatchkeyProvider>,
  )
  return { sent }
}

const region = () => screen.findByRole('region', { name: 'Transactions' })

describe('transaction toasts', () => {
  test('default: a transaction shows pending, then confirmed with a link to the chain explorer', async () => {
    let release!: (ok: boolean) => void
    const { sent } = await setup({ approve: () => new Promise<boolean>((resolve) => (release = resolve)) })
    await userEvent.click(screen.getByRole('button', { name: 'send' }))
    const toasts = await region()
    expect(toasts.getAttribute('data-lk-theme')).toBe('dark')
    expect(toasts.getAttribute('dir')).toBe('ltr')
    expect(within(toasts).getByRole('list').getAttribute('aria-live')).toBe('polite')
    expect((await within(toasts).findByRole('listitem')).textContent).toBe('Transaction pending…×')
    await act(async () => release(true))
    await waitFor(() => expect(within(toasts).getByRole('listitem').textContent).toBe('✓Transaction confirmedView on Local explorer×'))
    expect(within(toasts).getByRole('link', { name: 'View on Local explorer' }).getAttribute('href')).toBe(
      `http://localhost:5173/explorer/31337/tx/${sent.hash}`,
    )
    expect(sent.hash).toMatch(/^0x[0-9a-f]{64}$/)
  })

  test('behavior: a batch shows pending, then confirmed with the link to its transaction', async () => {
    await setup()
    await userEvent.click(screen.getByRole('button', { name: 'batch' }))
    const toasts = await region()
    await waitFor(() => expect(within(toasts).getByRole('listitem').textContent).toBe('✓Batch confirmedView on Local explorer×'))
    expect(within(toasts).getByRole('link').getAttribute('href')).toMatch(/^http:\/\/localhost:5173\/explorer\/31337\/tx\/0x[0-9a-f]{64}$/)
  })

  test('behavior: a transaction that reverts on chain shows failed, why, and Try again', async () => {
    await setup()
    await userEvent.click(screen.getByRole('button', { name: 'revert' }))
    const toasts = await region()
    await waitFor(() =>
      expect(within(toasts).getByRole('listitem').textContent).toBe('!Transaction failedIt was reverted on chain.View on Local explorerTry again×'),
    )
  })

  test('error: a rejected send shows failed with the error text; Try again sends it again, and Dismiss removes the toast', async () => {
    const answers = [false, true]
    const { sent } = await setup({ approve: async () => answers.shift() ?? true })
    await userEvent.click(screen.getByRole('button', { name: 'send' }))
    const toasts = await region()
    await waitFor(() => expect(within(toasts).getByRole('listitem').textContent).toBe('!Transaction failedUser rejected the request.Try again×'))
    expect((sent.error as { code?: string }).code).toBe('user_rejected')
    // Keyboard: Try again is reachable and activates with Enter.
    within(toasts).getByRole('button', { name: 'Try again' }).focus()
    await userEvent.keyboard('{Enter}')
    await waitFor(() => expect(within(toasts).getByRole('listitem').textContent).toBe('✓Transaction confirmedView on Local explorer×'))
    expect(within(toasts).getAllByRole('listitem')).toHaveLength(1)
    await userEvent.click(within(toasts).getByRole('button', { name: 'Dismiss' }))
    expect(within(toasts).queryAllByRole('listitem')).toHaveLength(0)
  })

  test('behavior: in Arabic the toasts are right-to-left and translated', async () => {
    await setup({ locale: 'ar', approve: async () => false })
    await userEvent.click(screen.getByRole('button', { name: 'send' }))
    const toasts = await screen.findByRole('region', { name: 'المعاملات' })
    expect(toasts.getAttribute('dir')).toBe('rtl')
    expect(toasts.getAttribute('lang')).toBe('ar')
    await waitFor(() => expect(within(toasts).getByRole('listitem').textContent).toBe('!فشلت المعاملةرفضتَ الطلب.أعد المحاولة×'))
  })

  test('behavior: toasts={false} shows no toast', async () => {
    const { sent } = await setup({ toasts: false })
    await userEvent.click(screen.getByRole('button', { name: 'send' }))
    await waitFor(() => expect(sent.hash).toMatch(/^0x[0-9a-f]{64}$/))
    await chainA.waitForTransactionReceipt({ hash: sent.hash as `0x${string}` })
    expect(screen.queryByRole('region')).toBe(null)
    expect(document.querySelector('.lk-toasts')).toBe(null)
  })
})
