import { TurnkeyClient } from '@turnkey/http'
import { IframeStamper } from '@turnkey/iframe-stamper'

// The embedding page of frames.e2e.ts, bundled for the browser: the official
// @turnkey/iframe-stamper and @turnkey/http, as an app uses them, and a record of every message
// the page receives (over each frame's channel, and as window messages) so the test can show
// what the page learns.

type Opened = { stamper: IframeStamper; received: unknown[] }

const opened = new Map<string, Opened>()
const windowMessages: { origin: string; data: unknown }[] = []
const waiting: ((message: { origin: string; data: unknown }) => void)[] = []

window.addEventListener('message', (event) => {
  const message = { origin: event.origin, data: event.data as unknown }
  windowMessages.push(message)
  for (const resolve of waiting.splice(0)) resolve(message)
})

const stamperOf = (name: string) => {
  const found = opened.get(name)
  if (!found) throw new Error(`no frame named ${name}`)
  return found.stamper
}

export const latchkeyTest = {
  /** Inserts a frame with the official stamper; resolves with its public key once the frame answers. */
  init(name: string, iframeUrl: string, ttlMs?: number): Promise<string> {
    const stamper = new IframeStamper({ iframeUrl, iframeElementId: name, iframeContainer: document.body })
    const received: unknown[] = []
    stamper.messageChannel.port1.addEventListener('message', (event) => received.push(event.data))
    opened.set(name, { stamper, received })
    return stamper.init(ttlMs)
  },
  stamper: stamperOf,
  /** Everything the frame named `name` sent this page over its channel. */
  received: (name: string) => opened.get(name)?.received ?? [],
  /** Every window message this page received. */
  windowMessages: () => windowMessages,
  /** The next window message, or the first one already received, from `origin`. */
  windowMessageFrom(origin: string): Promise<{ origin: string; data: unknown }> {
    const found = windowMessages.find((message) => message.origin === origin)
    if (found) return Promise.resolve(found)
    return new Promise((resolve) => {
      const check = (message: { origin: string; data: unknown }) => (message.origin === origin ? resolve(message) : waiting.push(check))
      waiting.push(check)
    })
  },
  /** whoami through @turnkey/http, stamped by the frame named `name`. */
  whoami(name: string, baseUrl: string, organizationId: string) {
    return new TurnkeyClient({ baseUrl }, stamperOf(name)).getWhoami({ organizationId })
  },
}

declare global {
  interface Window {
    latchkeyTest: typeof latchkeyTest
  }
}
window.latchkeyTest = latchkeyTest
