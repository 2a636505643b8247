// @vitest-environment happy-dom

import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { getWalletBook } from '@latchkey/core'
import { cleanup, render, screen, waitFor, within } from '@testing-library/react'
import userEvent from '@testing-library/user-event'
import { afterEach, describe, expect, test } from 'vitest'
import { renderWithClient } from '../../../../test/react.js'
import { ConnectButton } from '../ConnectButton.js'
import { iconOf } from './ConnectModal.js'
import { monogram, svgUrl } from './monogram.js'
import { WalletIcon } from './WalletIcon.js'
import { walletIcons } from './walletIcons.js'

afterEach(cleanup)

const book = getWalletBook().wallets
const decode = (url: string | null) => decodeURIComponent((url ?? '').replace('data:image/svg+xml,', ''))

async function openConnectModal() {
  await userEvent.click(screen.getByRole('button', { name: 'Connect Wallet' }))
  return screen.findByRole('dialog', { name: 'Connect a wallet' })
}

describe('wallet icons', () => {
  test('default: each bundled icon is a wallet of the book, an inline SVG with nothing remote or scripted', () => {
    const ids = new Set(book.map((wallet) => wallet.id))
    for (const [id, svg] of Object.entries(walletIcons)) {
      expect(ids.has(id), id).toBe(true)
      expect(svg, id).toMatch(/^<svg [^>]*xmlns="http:\/\/www\.w3\.org\/2000\/svg"[\s\S]*<\/svg>$/)
      expect(svg.replaceAll('http://www.w3.org/2000/svg', ''), id).not.toMatch(/https?:|<script|\son\w+=|href=/i)
    }
    expect(Object.keys(walletIcons).length).toBe(25)
  })

  test('default: LICENSES/icons.md records the source and licence of exactly the bundled icons', () => {
    const record = readFileSync(join(import.meta.dirname, '../../LICENSES/icons.md'), 'utf8')
    const rows = [...record.matchAll(/^\| `([\w-]+)` \| (@[\w/.-]+ [\d.]+) \| `([^`]+)` \| MIT \|$/gm)].map((row) => row[1])
    expect(rows.sort()).toEqual(Object.keys(walletIcons).sort())
  })

  test('behavior: "More wallets" shows each book wallet with its bundled icon, or its monogram when it has none', async () => {
    renderWithClient(<ConnectButton />)
    const dialog = await openConnectModal()
    const more = within(dialog).getByText('More wallets').closest('details') as HTMLElement
    // The icons are their own chunk: skeletons until it is here.
    await waitFor(() => expect(more.querySelector('.lk-skeleton')).toBeNull())
    for (const wallet of book) {
      const image = within(more)
        .getByRole('link', { name: `Get ${wallet.name}` })
        .querySelector('img')
      const expected = walletIcons[wallet.id] ? svgUrl(walletIcons[wallet.id] as string) : monogram(wallet.name, wallet.brandColor)
      expect(image?.getAttribute('src'), wallet.id).toBe(expected)
      expect(image?.getAttribute('alt')).toBe('')
    }
  })

  test('behavior: a skeleton stands in while the icons download', () => {
    const { container } = render(<WalletIcon id="metamask" name="MetaMask" icons={undefined} size={24} />)
    const skeleton = container.firstElementChild as HTMLElement
    expect([skeleton.tagName, skeleton.className, skeleton.getAttribute('aria-hidden'), skeleton.style.width, skeleton.style.height]).toEqual([
      'SPAN',
      'lk-skeleton lk-icon-skeleton',
      'true',
      '24px',
      '24px',
    ])
  })

  test("behavior: an installed wallet's own icon comes first, then the book's by rdns, then a monogram", () => {
    const announced = { id: 'io.rabby', rdns: 'io.rabby', name: 'Rabby', icon: 'data:image/png;base64,AA==' } as never
    expect(iconOf(announced, book)).toEqual({ src: 'data:image/png;base64,AA==', id: 'rabby', name: 'Rabby', color: '#7084FF' })
    const silent = { id: 'io.rabby', rdns: 'io.rabby', name: 'Rabby' } as never
    expect(iconOf(silent, book)).toEqual({ src: undefined, id: 'rabby', name: 'Rabby', color: '#7084FF' })
    const unknown = { id: 'dev', name: 'Dev Wallet' } as never
    expect(iconOf(unknown, book)).toEqual({ src: undefined, id: undefined, name: 'Dev Wallet', color: undefined })
  })
})

describe('monogram', () => {
  test('default: the initial in white on a dark brand colour', () => {
    expect(decode(monogram('Zerion', '#2962EF'))).toBe(
      '<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 64 64"><rect width="64" height="64" rx="14" fill="#2962EF"/><text x="32" y="43" fill="#fff" font-family="system-ui,sans-serif" font-size="30" font-weight="700" text-anchor="middle">Z</text></svg>',
    )
  })

  test('behavior: black on a light colour, whichever contrasts more', () => {
    expect(decode(monogram('zeal', '#FFD400'))).toContain('fill="#000" font-family')
  })

  test('error: a colour that is not #RRGGBB uses the accent; markup in a name is escaped', () => {
    const svg = decode(monogram('<b>', 'red;"/><script>'))
    expect(svg).toContain('fill="#5b4cf0"')
    expect(svg).toContain('>&#60;</text>')
    expect(svg).not.toContain('<script')
  })
})

describe('New to wallets?', () => {
  test('behavior: reachable by keyboard, explains wallets and links to some; Back returns focus to it', async () => {
    renderWithClient(<ConnectButton />)
    const dialog = await openConnectModal()
    const help = within(dialog).getByRole('button', { name: 'New to wallets?' })
    help.focus()
    await userEvent.keyboard('{Enter}')
    const helpDialog = await screen.findByRole('dialog', { name: 'New to wallets?' })
    const heading = within(helpDialog).getByRole('heading', { name: 'What is a wallet?' })
    expect(document.activeElement).toBe(heading)
    expect(within(helpDialog).getByRole('heading', { name: 'Where do I get one?' })).toBeTruthy()
    expect(within(helpDialog).getByText(/^A wallet keeps the keys to your digital assets/)).toBeTruthy()
    expect(
      within(helpDialog)
        .getAllByRole('link')
        .map((link) => [link.getAttribute('aria-label'), link.getAttribute('href')]),
    ).toEqual([
      ['Get MetaMask', 'https://metamask.io'],
      ['Get Coinbase Wallet', 'https://www.coinbase.com/wallet'],
      ['Get Phantom', 'https://phantom.app'],
      ['Get Rabby Wallet', 'https://rabby.io'],
      ['Get Rainbow', 'https://rainbow.me'],
      ['Get Trust Wallet', 'https://trustwallet.com'],
    ])
    await userEvent.click(within(helpDialog).getByRole('button', { name: 'Back' }))
    const list = await screen.findByRole('dialog', { name: 'Connect a wallet' })
    await waitFor(() => expect(document.activeElement).toBe(within(list).getByRole('button', { name: 'New to wallets?' })))
  })
})
