import type { Address, Connection, State } from './types.js'

/** Everything that moves the connection state (ARCHITECTURE.md, SPEC §4). */
export type StateEvent =
  | { type: 'connect'; connectorId: string; needsInit?: boolean }
  | { type: 'initialised' }
  | { type: 'pairing'; uri: string }
  | { type: 'reconnect'; connectorId: string }
  | { type: 'connected'; connectorId: string; accounts: readonly Address[]; chainId: number }
  | { type: 'failed' }
  | { type: 'accountsChanged'; accounts: readonly Address[] }
  | { type: 'chainChanged'; chainId: number }
  | { type: 'disconnected' }

/**
 * The connection state machine as a pure function. Events that do not apply in a state leave it
 * unchanged (the same object), so stale wallet events cannot corrupt a newer connection.
 *
 * @example
 * let state = initialState(1)
 * state = transition(state, { type: 'connect', connectorId: 'io.metamask' })
 */
export function transition(state: State, event: StateEvent): State {
  switch (event.type) {
    case 'connect':
      return {
        ...state,
        status: event.needsInit ? 'initialising' : 'connecting',
        pendingConnectorId: event.connectorId,
        pairingUri: undefined,
      }
    case 'initialised':
      return state.status === 'initialising' ? { ...state, status: 'connecting' } : state
    case 'pairing':
      return state.pendingConnectorId === undefined || state.status === 'connected' ? state : { ...state, status: 'pairing', pairingUri: event.uri }
    case 'reconnect':
      return { ...state, status: 'reconnecting', pendingConnectorId: event.connectorId }
    case 'connected': {
      const [first, ...rest] = event.accounts
      if (!first) return transition(state, { type: 'failed' })
      const connection: Connection = { connectorId: event.connectorId, accounts: [first, ...rest], chainId: event.chainId }
      return { status: 'connected', connection, pendingConnectorId: undefined, pairingUri: undefined, chainId: event.chainId }
    }
    case 'failed':
      return {
        ...state,
        status: state.connection ? 'connected' : 'disconnected',
        pendingConnectorId: undefined,
        pairingUri: undefined,
      }
    case 'accountsChanged': {
      if (!state.connection) return state
      const [first, ...rest] = event.accounts
      if (!first) return transition(state, { type: 'disconnected' })
      return { ...state, connection: { ...state.connection, accounts: [first, ...rest] } }
    }
    case 'chainChanged':
      if (!state.connection) return state
      return { ...state, chainId: event.chainId, connection: { ...state.connection, chainId: event.chainId } }
    case 'disconnected':
      return { ...state, status: 'disconnected', connection: undefined, pendingConnectorId: undefined, pairingUri: undefined }
  }
}

/** The state before anything happened. */
export function initialState(chainId: number): State {
  return { status: 'disconnected', connection: undefined, pendingConnectorId: undefined, pairingUri: undefined, chainId }
}
