import type { IncomingMessage } from 'node:http'

export type ConnectionLimits = {
  /** Open WebSockets the relay holds at once, from everyone. Default 50 000; 0: no cap. */
  maxConnections?: number | undefined
  /**
   * Open WebSockets from one IP address (IPv6: one /64, what one host is usually given). Default
   * 2 000; 0: no cap. Behind a proxy every client has the proxy's address: cap there instead.
   */
  maxConnectionsPerIp?: number | undefined
}

export const DEFAULT_MAX_CONNECTIONS = 50_000
export const DEFAULT_MAX_CONNECTIONS_PER_IP = 2_000

/** An upgrade refused before its 101: the HTTP status and the text body. */
export type UpgradeRefusal = { status: 429 | 503; message: string }

/**
 * Counts open WebSockets, overall and per IP, and refuses an upgrade past either cap with an HTTP
 * status before the WebSocket opens: a WalletConnect client sees its connect fail ("Unexpected
 * server response: 429") and tries again later, as it does when a relay is down. Counting happens
 * once per connection, never per message.
 *
 * @example
 * const gate = connectionGate({ maxConnectionsPerIp: 100 })
 * const refusal = gate.admit(request) // then gate.release(request) when it closes
 */
export function connectionGate(limits: ConnectionLimits = {}) {
  const maxConnections = limits.maxConnections ?? DEFAULT_MAX_CONNECTIONS
  const maxPerIp = limits.maxConnectionsPerIp ?? DEFAULT_MAX_CONNECTIONS_PER_IP
  for (const [name, value] of [
    ['maxConnections', maxConnections],
    ['maxConnectionsPerIp', maxPerIp],
  ] as const)
    if (!Number.isSafeInteger(value) || value < 0) throw new RangeError(`${name} must be a whole number, 0 for no cap`)
  const byIp = new Map<string, number>()
  /** The address each admitted upgrade was counted under, so its release finds it again. */
  const counted = new WeakMap<IncomingMessage, string>()
  let open = 0
  return {
    /** Counts the upgrade and answers undefined, or answers why it is refused, counting nothing. */
    admit(request: IncomingMessage): UpgradeRefusal | undefined {
      if (maxConnections > 0 && open >= maxConnections)
        return { status: 503, message: `The relay holds its maximum of ${maxConnections} connections: try again later` }
      const ip = addressKey(request.socket.remoteAddress ?? '')
      const fromIp = byIp.get(ip) ?? 0
      if (maxPerIp > 0 && fromIp >= maxPerIp) return { status: 429, message: `Too many connections from your address: at most ${maxPerIp}` }
      open++
      byIp.set(ip, fromIp + 1)
      counted.set(request, ip)
      return undefined
    },
    /** An admitted connection closed. */
    release(request: IncomingMessage) {
      const ip = counted.get(request)
      if (ip === undefined) return
      counted.delete(request)
      open--
      const left = (byIp.get(ip) ?? 1) - 1
      if (left > 0) byIp.set(ip, left)
      else byIp.delete(ip)
    },
    /** Open connections counted, for tests. */
    open: () => open,
  }
}

/**
 * The key an address is counted under: an IPv4 address (also IPv4-mapped IPv6) as it is, an IPv6
 * address by its first 64 bits, since one host usually holds a whole /64.
 */
export function addressKey(address: string): string {
  if (!address.includes(':')) return address
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address)
  if (mapped) return mapped[1]!
  const [head = '', tail] = address.toLowerCase().split('%')[0]!.split('::') as [string, string | undefined]
  const front = head ? head.split(':') : []
  const back = tail === undefined ? [] : tail ? tail.split(':') : []
  const groups = tail === undefined ? front : [...front, ...Array<string>(Math.max(0, 8 - front.length - back.length)).fill('0'), ...back]
  return `${groups
    .slice(0, 4)
    .map((group) => group.replace(/^0+(?=.)/, ''))
    .join(':')}::/64`
}
