// @vitest-environment happy-dom

import { type Connector, type ConnectorEvents, type CreateConnectorFn, createClient, createMemoryStorage } from '@latchkey/core'
import { cleanup, render, screen, waitFor, within } from '@testing-library/react'
import userEvent from '@testing-library/user-event'
import { afterEach, expect, test } from 'vitest'
import { testChains } from '../../../../test/chains.js'
import { createRecordingLogger } from '../../../../test/setup.js'
import { LatchkeyProvider } from '../LatchkeyProvider.js'
import { ConnectModal } from './ConnectModal.js'

afterEach(cleanup)

const expiry = Math.floor(Date.now() / 1000) + 300
const uriOf = (n: number) => `wc:${String(n).repeat(64).slice(0, 64)}@2?relay-protocol=irn&symKey=${'b'.repeat(64)}&expiryTimestamp=${expiry}`

/**
 * A walletConnect-type connector that publishes pairing URIs as the real one does and waits until
 * the attempt is cancelled; the view is what is under test here (the real connector has its own
 * tests against a real relay and wallet, and e2e covers both together).
 */
function pairingConnector() {
  const listeners = new Map<string, Set<(data: never) => void>>()
  const emitter = {
    on(name: string, listener: (data: never) => void) {
      const set = listeners.get(name) ?? new Set()
      set.add(listener)
      listeners.set(name, set)
      return () => void set.delete(listener)
    },
    emit(name: string, data: unknown) {
      for (const listener of listeners.get(name) ?? []) (listener as (data: unknown) => void)(data)
    },
    listenerCount: (name: string) => listeners.get(name)?.size ?? 0,
  } as unknown as Connector['emitter']
  const fn = Object.assign(
    (): Connector => ({
      id: 'walletConnect',
      name: 'WalletConnect',
      type: 'walletConnect',
      emitter,
      connect: ({ signal } = {}) =>
        new Promise((_, reject) => {
          emitter.emit('message', { type: 'display_uri', data: uriOf(1) } satisfies ConnectorEvents['message'])
          signal?.addEventListener('abort', () => reject(signal.reason))
        }),
      disconnect: async () => undefined,
      getAccounts: async () => [],
      getChainId: async () => 31337,
      getProvider: async () => {
        throw new Error('not used')
      },
      isAuthorized: async () => false,
      switchChain: async () => {
        throw new Error('not used')
      },
    }),
    { id: 'walletConnect' },
  ) as CreateConnectorFn
  return { fn, emitter }
}

function renderModal() {
  const { fn, emitter } = pairingConnector()
  const client = createClient({
    chains: testChains(),
    storage: createMemoryStorage(),
    logger: createRecordingLogger(),
    window: new EventTarget(),
    connectors: [fn],
  })
  render(
    <LatchkeyProvider client={client}>
      <ConnectModal theme="light" onClose={() => undefined} />
    </LatchkeyProvider>,
  )
  return { client, emitter }
}

test('default: picking WalletConnect shows the QR code of the URI, Copy link copies it', async () => {
  const writes: string[] = []
  Object.defineProperty(navigator, 'clipboard', { value: { writeText: async (text: string) => void writes.push(text) }, configurable: true })
  renderModal()
  await userEvent.click(screen.getByRole('button', { name: 'WalletConnect' }))
  const qr = await screen.findByRole('img', { name: 'QR code for WalletConnect' })
  expect(qr.querySelector('svg')).not.toBeNull()
  expect(screen.getByText(/This code renews in [45]:\d\d/)).toBeTruthy()
  await userEvent.click(screen.getByRole('button', { name: 'Copy link' }))
  expect(writes).toEqual([uriOf(1)])
  expect(screen.getByRole('button', { name: 'Copied' })).toBeTruthy()
})

test('wallet links carry the URI, prepared before the tap; a rejection is shown and a new code replaces the old', async () => {
  const { emitter } = renderModal()
  await userEvent.click(screen.getByRole('button', { name: 'WalletConnect' }))
  await screen.findByRole('img', { name: 'QR code for WalletConnect' })
  const metaMask = screen.getByRole('link', { name: 'Open MetaMask' })
  expect(metaMask.getAttribute('href')).toBe(`https://metamask.app.link/wc?uri=${encodeURIComponent(uriOf(1))}`)
  const before = screen.getByRole('img', { name: 'QR code for WalletConnect' }).innerHTML

  emitter.emit('message', { type: 'connection_rejected', data: { code: 'connection_rejected', shortMessage: 'Connection rejected. Please try again.' } })
  emitter.emit('message', { type: 'display_uri', data: uriOf(2) })
  expect((await screen.findByRole('alert')).textContent).toBe('Connection rejected. Please try again.')
  await waitFor(() => expect(screen.getByRole('img', { name: 'QR code for WalletConnect' }).innerHTML).not.toBe(before))
  expect(within(screen.getByRole('dialog')).getByRole('link', { name: 'Open MetaMask' }).getAttribute('href')).toContain(encodeURIComponent(uriOf(2)))
})

test('Cancel goes back to the wallet list', async () => {
  renderModal()
  await userEvent.click(screen.getByRole('button', { name: 'WalletConnect' }))
  await screen.findByRole('img', { name: 'QR code for WalletConnect' })
  await userEvent.click(screen.getByRole('button', { name: 'Cancel' }))
  expect(await screen.findByRole('button', { name: 'WalletConnect' })).toBeTruthy()
})
