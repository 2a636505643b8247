// @vitest-environment happy-dom

import type { Connector } from '@latchkey/core'
import { cleanup, fireEvent, screen } from '@testing-library/react'
import userEvent from '@testing-library/user-event'
import { afterEach, describe, expect, test } from 'vitest'
import { renderWithClient } from '../../../../test/react.js'
import { ConnectButton } from '../ConnectButton.js'
import { orderWallets } from './ConnectModal.js'
import { SWIPE_CLOSE_DISTANCE } from './swipe.js'

afterEach(cleanup)

async function openConnect() {
  renderWithClient(<ConnectButton />)
  await userEvent.click(screen.getByRole('button', { name: 'Connect Wallet' }))
  const dialog = await screen.findByRole('dialog', { name: 'Connect a wallet' })
  return { dialog, grab: dialog.querySelector('.lk-grab') as HTMLElement }
}

function drag(grab: HTMLElement, distance: number) {
  fireEvent.pointerDown(grab, { clientY: 100, pointerId: 1 })
  fireEvent.pointerMove(grab, { clientY: 100 + distance, pointerId: 1 })
  fireEvent.pointerUp(grab, { clientY: 100 + distance, pointerId: 1 })
}

describe('bottom sheet', () => {
  test('behavior: swiping the handle down past the threshold closes the modal', async () => {
    const { grab } = await openConnect()
    expect(grab.querySelector('.lk-handle')).toBeTruthy()
    drag(grab, SWIPE_CLOSE_DISTANCE + 20)
    expect(screen.queryByRole('dialog')).toBeNull()
  })

  test('behavior: a short drag springs back and keeps the modal open', async () => {
    const { dialog, grab } = await openConnect()
    fireEvent.pointerDown(grab, { clientY: 100, pointerId: 1 })
    fireEvent.pointerMove(grab, { clientY: 140, pointerId: 1 })
    expect(dialog.style.transform).toBe('translateY(40px)')
    fireEvent.pointerUp(grab, { clientY: 140, pointerId: 1 })
    expect(dialog.style.transform).toBe('')
    expect(screen.getByRole('dialog', { name: 'Connect a wallet' })).toBe(dialog)
  })

  test('behavior: dragging up does nothing; Close in the header still closes by click', async () => {
    const { grab } = await openConnect()
    drag(grab, -200)
    expect(screen.getByRole('dialog')).toBeTruthy()
    await userEvent.click(screen.getByRole('button', { name: 'Close' }))
    expect(screen.queryByRole('dialog')).toBeNull()
  })
})

describe('wallet order', () => {
  const wallet = (id: string, type: string) => ({ id, type }) as unknown as Connector
  const wc = wallet('walletConnect', 'walletConnect')
  const metaMask = wallet('io.metamask', 'injected')
  const other = wallet('other', 'injected')

  test('default: the last used wallet first', () => {
    expect(orderWallets([metaMask, wc], 'walletConnect', false).map((c) => c.id)).toEqual(['walletConnect', 'io.metamask'])
  })

  test("behavior: in a wallet's in-app browser its injected connector comes first, before the last used", () => {
    expect(orderWallets([wc, metaMask], 'walletConnect', true).map((c) => c.id)).toEqual(['io.metamask', 'walletConnect'])
    expect(orderWallets([wc, other, metaMask], 'io.metamask', true).map((c) => c.id)).toEqual(['io.metamask', 'other', 'walletConnect'])
  })
})
