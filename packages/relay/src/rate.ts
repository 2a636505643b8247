// Each client's requests per second, over all its connections and, on a store several nodes
// share (Redis), over every node.
import type { ClientRate, Connection } from './connection.js'

/**
 * The relay's rate check: a function that counts one request of a connection's client and says
 * whether it is within `maxRequestsPerSecond`. `countShared` is a shared store's counter.
 *
 * @example
 * const withinRate = requestRate({ now: Date.now, maxRequestsPerSecond: 200, countShared: undefined })
 * if (!withinRate(connection)) refuse()
 */
export function requestRate(options: {
  now: () => number
  maxRequestsPerSecond: number
  countShared: ((clientId: string, now: number, count: number) => Promise<number>) | undefined
}): (connection: Pick<Connection, 'clientId' | 'rate' | 'rateSecond'>) => boolean | Promise<boolean> {
  const { now, maxRequestsPerSecond, countShared } = options
  /**
   * The current second's requests per client (a store of this node alone), or what this node may
   * still let through of each client's allowance (a shared store: taken a tenth of the limit at a
   * time, so Redis sees one count per tenth rather than one per request).
   */
  let rateWindow = { second: -1, clients: new Map<string, ClientRate>() }
  const allowanceChunk = Math.max(1, Math.floor(maxRequestsPerSecond / 10))

  return withinRate

  /**
   * Counts one request of the connection's client in the current second: whether it is within the
   * limit, at once for a store of this node alone, after a round trip for a shared one (which
   * counts every node's requests of that client).
   */
  function withinRate(connection: Pick<Connection, 'clientId' | 'rate' | 'rateSecond'>): boolean | Promise<boolean> {
    const second = Math.floor(now() / 1000)
    // A new second starts every count afresh, and drops the last second's clients with it.
    if (second !== rateWindow.second) rateWindow = { second, clients: new Map() }
    // A client's connections share its count; each finds it once a second, not once a request.
    let rate = connection.rate
    if (connection.rateSecond !== second || !rate) {
      const { clientId } = connection
      rate = rateWindow.clients.get(clientId)
      if (!rate) rateWindow.clients.set(clientId, (rate = { count: 0, left: 0, spent: false, taking: undefined }))
      connection.rate = rate
      connection.rateSecond = second
    }
    if (countShared) return take(rate, connection.clientId, second)
    return ++rate.count <= maxRequestsPerSecond
  }

  /**
   * One request from a client's allowance on a shared store: from what this node holds, else after
   * taking the next part from the store (requests waiting on it are served in arrival order). A
   * node never lets a client past the limit over all nodes; parts other nodes hold unused may have
   * it refused a little early.
   */
  function take(allowance: ClientRate, clientId: string, second: number): boolean | Promise<boolean> {
    if (allowance.taking) return allowance.taking.then(() => take(allowance, clientId, second))
    if (allowance.left > 0) {
      allowance.left--
      return true
    }
    if (allowance.spent) return false
    const taking = countShared!(clientId, second * 1000, allowanceChunk).then(
      (total) => {
        allowance.left = Math.max(0, Math.min(allowanceChunk, maxRequestsPerSecond - (total - allowanceChunk)))
        // Less than a whole part: the limit is reached, over all nodes, for this second.
        allowance.spent = allowance.left < allowanceChunk
        allowance.taking = undefined
      },
      (error: unknown) => {
        allowance.taking = undefined
        throw error
      },
    )
    allowance.taking = taking
    return taking.then(() => take(allowance, clientId, second))
  }
}
