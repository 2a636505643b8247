import { renderSVG } from 'uqr'

/*
 * The QR modal for apps without React: a native <dialog> in a shadow root, so the page's CSS
 * neither leaks in nor out. The QR code is an SVG drawn by uqr (no canvas). Loaded by the
 * walletConnect connector when `showQrModal: true`.
 */

export type QrModal = {
  /** Shows (or refreshes) the code for a pairing URI. */
  open(uri: string): void
  close(): void
}

export type CreateQrModalOptions = {
  /** Called when the user closes the modal (Esc, the close button). */
  onClose?: (() => void) | undefined
  /** Where the modal is attached. Default `document.body`. */
  parent?: HTMLElement | undefined
}

const css = `
dialog { border: 0; border-radius: 16px; padding: 20px; width: min(340px, 90vw); font: 15px system-ui, sans-serif;
  color: light-dark(#111, #eee); background: light-dark(#fff, #1c1c1e); color-scheme: light dark; }
dialog::backdrop { background: rgb(0 0 0 / 0.4); }
header { display: flex; justify-content: space-between; align-items: center; margin-bottom: 12px; }
h2 { font-size: 17px; margin: 0; }
.qr { background: #fff; border-radius: 12px; padding: 8px; }
.qr svg { display: block; width: 100%; height: auto; }
button { font: inherit; border-radius: 10px; border: 1px solid light-dark(#ccc, #444); background: transparent; color: inherit; padding: 8px 12px; cursor: pointer; }
.copy { width: 100%; margin-top: 12px; }
`

/**
 * @example
 * const modal = createQrModal({ onClose: () => controller.abort() })
 * modal.open('wc:…')
 */
export function createQrModal(options: CreateQrModalOptions = {}): QrModal {
  if (typeof document === 'undefined') throw new Error('The QR modal needs a DOM.')
  const host = document.createElement('latchkey-qr-modal')
  const root = host.attachShadow({ mode: 'open' })
  root.innerHTML = `<style>${css}</style>
<dialog aria-labelledby="title">
  <header><h2 id="title">Scan with your wallet</h2><button type="button" class="close" aria-label="Close">✕</button></header>
  <div class="qr" role="img" aria-label="QR code"></div>
  <button type="button" class="copy">Copy link</button>
</dialog>`
  const dialog = root.querySelector('dialog')!
  const qr = root.querySelector<HTMLElement>('.qr')!
  const copy = root.querySelector<HTMLButtonElement>('.copy')!
  let uri = ''
  let closing = false

  root.querySelector('.close')!.addEventListener('click', () => dialog.close())
  copy.addEventListener('click', () => {
    void navigator.clipboard?.writeText(uri).then(() => (copy.textContent = 'Copied'))
  })
  dialog.addEventListener('close', () => {
    host.remove()
    if (!closing) options.onClose?.()
  })

  return {
    open(next) {
      uri = next
      qr.innerHTML = renderSVG(next, { ecc: 'M', border: 2 })
      copy.textContent = 'Copy link'
      if (!host.isConnected) (options.parent ?? document.body).append(host)
      if (!dialog.open) dialog.showModal()
    },
    close() {
      closing = true
      if (dialog.open) dialog.close()
      host.remove()
      closing = false
    },
  }
}
