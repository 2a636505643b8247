// @vitest-environment happy-dom
import { expect, test } from 'vitest'
import { createQrModal } from './index.js'

const uri = `wc:${'a'.repeat(64)}@2?relay-protocol=irn&symKey=${'b'.repeat(64)}&expiryTimestamp=9999999999`

test('default: open shows a QR code of the URI and a Copy link button; close removes it', () => {
  const modal = createQrModal()
  modal.open(uri)
  const host = document.querySelector('latchkey-qr-modal')
  const root = host?.shadowRoot
  expect(root?.querySelector('dialog')?.open).toBe(true)
  expect(root?.querySelector('.qr svg')).not.toBeNull()
  expect(root?.querySelector('.copy')?.textContent).toBe('Copy link')
  const first = root?.querySelector('.qr')?.innerHTML
  modal.open(uri.replace('a'.repeat(64), 'c'.repeat(64)))
  expect(root?.querySelector('.qr')?.innerHTML).not.toBe(first)
  modal.close()
  expect(document.querySelector('latchkey-qr-modal')).toBeNull()
})

test('the close button calls onClose; close() by the app does not', () => {
  let closed = 0
  const modal = createQrModal({ onClose: () => closed++ })
  modal.open(uri)
  modal.close()
  expect(closed).toBe(0)
  modal.open(uri)
  document.querySelector('latchkey-qr-modal')?.shadowRoot?.querySelector<HTMLButtonElement>('.close')?.click()
  expect(closed).toBe(1)
})

test('default: exports', async () => {
  expect(Object.keys(await import('./index.js')).sort()).toMatchInlineSnapshot(`
    [
      "createQrModal",
    ]
  `)
})
