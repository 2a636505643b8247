// @vitest-environment happy-dom

import { connect, getWalletBook } from '@latchkey/core'
import { act, cleanup, screen, waitFor, within } from '@testing-library/react'
import userEvent from '@testing-library/user-event'
import { privateKeyToAddress } from 'viem/accounts'
import { afterEach, describe, expect, test } from 'vitest'
import { anvilKeys } from '../../../test/chains.js'
import { renderWithClient } from '../../../test/react.js'
import { ConnectButton } from './ConnectButton.js'
import { trimDecimals } from './modal/AccountModal.js'
import { ConnectModal, notInstalled } from './modal/ConnectModal.js'

const address = privateKeyToAddress(anvilKeys[0])
afterEach(cleanup)

describe('ConnectButton', () => {
  test('default: "Connect Wallet" opens the connect modal', async () => {
    renderWithClient(<ConnectButton />)
    await userEvent.click(screen.getByRole('button', { name: 'Connect Wallet' }))
    expect(await screen.findByRole('dialog', { name: 'Connect a wallet' })).toBeTruthy()
  })

  test('behavior: connected, it shows chain and short address and opens the account modal', async () => {
    const { client } = renderWithClient(<ConnectButton />)
    await act(() => connect(client, { connector: 'dev' }))
    const button = screen.getByRole('button', { name: 'Account 0xf39F…2266' })
    expect(button.textContent).toBe('Anvil A0xf39F…2266')
    await userEvent.click(button)
    expect(await screen.findByRole('dialog', { name: 'Account' })).toBeTruthy()
  })

  test('behavior: the render prop gets state and openers', async () => {
    renderWithClient(
      <ConnectButton>
        {({ isConnected, status, openConnectModal }) => <button type="button" onClick={openConnectModal}>{`mine ${status} ${isConnected}`}</button>}
      </ConnectButton>,
    )
    await userEvent.click(screen.getByRole('button', { name: 'mine disconnected false' }))
    expect(await screen.findByRole('dialog', { name: 'Connect a wallet' })).toBeTruthy()
  })
})

describe('connect modal', () => {
  async function open() {
    await userEvent.click(screen.getByRole('button', { name: 'Connect Wallet' }))
    return screen.findByRole('dialog', { name: 'Connect a wallet' })
  }

  test('default: one button per connector, named exactly, with the Recent marker on the last used', async () => {
    const { storage } = renderWithClient(<ConnectButton />, {})
    storage.setItem('latchkey.recentConnectorId', '"other"')
    const dialog = await open()
    const buttons = within(dialog)
      .getAllByRole('button')
      .filter((b) => b.classList.contains('lk-wallet'))
    expect(buttons.map((b) => b.getAttribute('aria-label'))).toEqual(['Other Wallet', 'Dev Wallet'])
    // The badges describe each button: both wallets are installed (injected), the other one last used.
    const description = (name: string) =>
      within(dialog)
        .getByRole('button', { name })
        .getAttribute('aria-describedby')
        ?.split(' ')
        .map((id) => document.getElementById(id)?.textContent)
    expect(description('Other Wallet')).toEqual(['Last used', 'Installed'])
    expect(description('Dev Wallet')).toEqual(['Installed'])
    expect(within(dialog).getAllByText('Recent').length).toBe(1)
    expect(within(dialog).getAllByText('Installed', { selector: '.lk-badge' }).length).toBe(2)
  })

  test('behavior: wallet-book wallets that are not installed are offered as links to get them', async () => {
    renderWithClient(<ConnectButton />)
    const dialog = await open()
    const link = within(dialog).getByRole('link', { name: 'Get MetaMask' })
    expect(link.getAttribute('href')).toBe('https://metamask.io')
    expect(link.getAttribute('rel')).toBe('noopener noreferrer')
    expect(within(dialog).getAllByRole('link').length).toBe(getWalletBook().wallets.length)
  })

  test('behavior: an installed book wallet is not offered again', () => {
    const book = getWalletBook().wallets
    const rabby = { id: 'io.rabby', rdns: 'io.rabby', name: 'Rabby' } as never
    const metamask = { id: 'metamask', name: 'MetaMask' } as never
    const left = notInstalled(book, [rabby, metamask]).map((w) => w.id)
    expect(left).not.toContain('rabby')
    expect(left).not.toContain('metamask')
    expect(left.length).toBe(book.length - 2)
  })

  test('behavior: pending view, Cancel returns to the list', async () => {
    renderWithClient(<ConnectButton />, { decide: () => new Promise(() => {}) })
    const dialog = await open()
    await userEvent.click(within(dialog).getByRole('button', { name: 'Dev Wallet' }))
    expect(await within(dialog).findByText('Confirm the connection in Dev Wallet')).toBeTruthy()
    await userEvent.click(within(dialog).getByRole('button', { name: 'Cancel' }))
    expect(await within(screen.getByRole('dialog', { name: 'Connect a wallet' })).findByRole('button', { name: 'Dev Wallet' })).toBeTruthy()
  })

  test('error: a rejected attempt shows the alert; Try again then connects and closes the modal', async () => {
    let allow = false
    const { client } = renderWithClient(<ConnectButton />, { decide: async () => allow })
    const dialog = await open()
    await userEvent.click(within(dialog).getByRole('button', { name: 'Dev Wallet' }))
    const alert = await within(dialog).findByRole('alert')
    expect(alert.textContent).toBe('User rejected the request.')
    allow = true
    await userEvent.click(within(dialog).getByRole('button', { name: 'Try again' }))
    await waitFor(() => expect(screen.queryByRole('dialog', { name: 'Connect a wallet' })).toBeNull())
    expect(client.getState().connection?.accounts).toEqual([address])
  })

  test('behavior: dialog semantics, focus in, Tab trapped, Escape closes, focus returns', async () => {
    renderWithClient(<ConnectButton />)
    const trigger = screen.getByRole('button', { name: 'Connect Wallet' })
    trigger.focus()
    await userEvent.click(trigger)
    const dialog = await screen.findByRole('dialog', { name: 'Connect a wallet' })
    expect(dialog.getAttribute('aria-modal')).toBe('true')
    expect(dialog.contains(document.activeElement)).toBe(true)
    expect(document.activeElement?.getAttribute('aria-label')).toBe('Close')
    await userEvent.tab({ shift: true })
    expect(dialog.contains(document.activeElement)).toBe(true)
    await userEvent.keyboard('{Escape}')
    await waitFor(() => expect(screen.queryByRole('dialog')).toBeNull())
    expect(document.activeElement).toBe(trigger)
  })

  test('behavior: ConnectModal is a plain component that the lazy chunk exports', () => {
    expect(typeof ConnectModal).toBe('function')
  })
})

describe('account modal', () => {
  test('default: address, balance, explorer link, network switch and disconnect', async () => {
    const { client, storage } = renderWithClient(<ConnectButton />)
    await act(() => connect(client, { connector: 'dev' }))
    await userEvent.click(screen.getByRole('button', { name: 'Account 0xf39F…2266' }))
    const dialog = await screen.findByRole('dialog', { name: 'Account' })
    expect(within(dialog).getByText(address)).toBeTruthy()
    await waitFor(() => expect(within(dialog).getByLabelText('Balance').textContent).toMatch(/^\d[\d,]*(\.\d+)? ETH$/))
    expect(within(dialog).getByRole('link', { name: 'View on Local explorer' }).getAttribute('href')).toBe(
      `http://localhost:5173/explorer/31337/address/${address}`,
    )
    expect(within(dialog).getByRole('button', { name: 'Anvil A (31337)' }).getAttribute('aria-pressed')).toBe('true')
    await userEvent.click(within(dialog).getByRole('button', { name: 'Anvil B (31338)' }))
    await waitFor(() => expect(client.getState().chainId).toBe(31338))
    expect(within(dialog).queryByRole('link')).toBeNull() // chain B has no explorer
    await userEvent.click(within(dialog).getByRole('button', { name: 'Disconnect' }))
    await waitFor(() => expect(screen.queryByRole('dialog')).toBeNull())
    expect(client.getState().status).toBe('disconnected')
    expect(storage.getItem('latchkey.dev.activeAccount')).toBeNull()
    expect(screen.getByRole('button', { name: 'Connect Wallet' })).toBeTruthy()
  })

  test('behavior: Copy address writes to the clipboard and says so', async () => {
    const user = userEvent.setup()
    const { client } = renderWithClient(<ConnectButton />)
    await act(() => connect(client, { connector: 'dev' }))
    await user.click(screen.getByRole('button', { name: 'Account 0xf39F…2266' }))
    const dialog = await screen.findByRole('dialog', { name: 'Account' })
    await user.click(within(dialog).getByRole('button', { name: 'Copy address' }))
    expect(await within(dialog).findByRole('button', { name: 'Copied' })).toBeTruthy()
    expect(await navigator.clipboard.readText()).toBe(address)
  })

  test('error: a refused switch shows the reason and keeps the chain', async () => {
    const { client } = renderWithClient(<ConnectButton />, { decide: async ({ method }) => method !== 'wallet_switchEthereumChain' })
    await act(() => connect(client, { connector: 'dev' }))
    await userEvent.click(screen.getByRole('button', { name: 'Account 0xf39F…2266' }))
    const dialog = await screen.findByRole('dialog', { name: 'Account' })
    await userEvent.click(within(dialog).getByRole('button', { name: 'Anvil B (31338)' }))
    expect((await within(dialog).findByRole('alert')).textContent).toBe('User rejected the request.')
    expect(client.getState().chainId).toBe(31337)
  })

  test('default: trimDecimals', () => {
    expect(trimDecimals('10000')).toBe('10000')
    expect(trimDecimals('9999.998765432')).toBe('9999.9987')
    expect(trimDecimals('0.10000')).toBe('0.1')
  })
})
