import type { FrameHandler, FrameReply } from './channel.js'
import { FrameError } from './encoding.js'
import { browserAccepts, parseSettings } from './settings.js'

// What every frame page reads from its HTML (the kms writes it into meta tags: pages fetch
// nothing) and the few DOM helpers they share. Text goes in with textContent only.

export type PageConfig = {
  /** `auth`, `recovery`, `export` or `import`. */
  readonly page: string
  readonly parentOrigins: readonly string[]
  /**
   * The kms's bundle signers, uncompressed hex: its signer key, and its next (or previous) one
   * while the signer key rotates, so a frame opened before the swap accepts bundles after it.
   */
  readonly signerPublicKeys: readonly string[]
}

/** The content of the page's `<meta name>`, '' when it is missing. */
export const metaContent = (document: Document, name: string): string => document.querySelector(`meta[name="${name}"]`)?.getAttribute('content')?.trim() ?? ''

export function pageConfig(document: Document): PageConfig {
  const meta = (name: string) => metaContent(document, name)
  return {
    page: meta('latchkey-frame'),
    parentOrigins: meta('latchkey-parent-origins').split(/\s+/).filter(Boolean),
    signerPublicKeys: meta('latchkey-signer-public-key').split(/\s+/).filter(Boolean),
  }
}

export function element<type extends HTMLElement = HTMLElement>(id: string): type {
  const found = document.getElementById(id)
  if (!found) throw new Error(`#${id} is missing from the page`)
  return found as type
}

/** Shows why the frame will not run, in place of its content. */
export function showRefusal(message: string) {
  const main = document.querySelector('main')
  if (!main) return
  const alert = document.createElement('p')
  alert.className = 'error'
  alert.setAttribute('role', 'alert')
  alert.textContent = `This frame cannot run here: ${message}.`
  main.replaceChildren(alert)
}

/** Shows a handler's refusal in the frame's alert as well as sending it to the parent. */
export function showingErrors(alert: HTMLElement, handler: FrameHandler): FrameHandler {
  return async (request, context) => {
    try {
      const reply = await handler(request, context)
      alert.hidden = true
      alert.textContent = ''
      return reply
    } catch (error) {
      if (error instanceof FrameError) {
        alert.textContent = `${error.message.charAt(0).toUpperCase()}${error.message.slice(1)}.`
        alert.hidden = false
      }
      throw error
    }
  }
}

/** APPLY_SETTINGS on the secret's box and its label. */
export function applySettings(value: string, targets: { secret: HTMLElement; label: HTMLElement }): FrameReply {
  for (const declaration of parseSettings(value, browserAccepts)) targets[declaration.target].style.setProperty(declaration.property, declaration.value)
  return { type: 'SETTINGS_APPLIED', value: true }
}
