import { describe, expect, test } from 'vitest'
import { initialState, transition } from './state.js'

const alice = '0x00000000000000000000000000000000000a11ce'
const bob = '0x0000000000000000000000000000000000000b0b'

describe('transition', () => {
  test('default: disconnected → connecting → connected', () => {
    let state = initialState(1)
    state = transition(state, { type: 'connect', connectorId: 'io.metamask' })
    expect(state).toMatchObject({ status: 'connecting', pendingConnectorId: 'io.metamask' })
    state = transition(state, { type: 'connected', connectorId: 'io.metamask', accounts: [alice], chainId: 31337 })
    expect(state).toEqual({
      status: 'connected',
      connection: { connectorId: 'io.metamask', accounts: [alice], chainId: 31337 },
      pendingConnectorId: undefined,
      pairingUri: undefined,
      chainId: 31337,
    })
  })

  test('behavior: a pairing connector goes initialising → connecting → pairing with the URI', () => {
    let state = transition(initialState(1), { type: 'connect', connectorId: 'walletConnect', needsInit: true })
    expect(state.status).toBe('initialising')
    state = transition(state, { type: 'initialised' })
    expect(state.status).toBe('connecting')
    state = transition(state, { type: 'pairing', uri: 'wc:abc@2' })
    expect(state).toMatchObject({ status: 'pairing', pairingUri: 'wc:abc@2' })
  })

  test('behavior: failure returns to disconnected, or to the connection that was live', () => {
    const failed = transition(transition(initialState(1), { type: 'connect', connectorId: 'x' }), { type: 'failed' })
    expect(failed).toMatchObject({ status: 'disconnected', pendingConnectorId: undefined })
    const live = transition(initialState(1), { type: 'connected', connectorId: 'a', accounts: [alice], chainId: 1 })
    const retried = transition(transition(live, { type: 'connect', connectorId: 'b' }), { type: 'failed' })
    expect(retried).toMatchObject({ status: 'connected', connection: { connectorId: 'a' } })
  })

  test('behavior: accountsChanged updates the active account; an empty list disconnects', () => {
    const live = transition(initialState(1), { type: 'connected', connectorId: 'a', accounts: [alice], chainId: 1 })
    expect(transition(live, { type: 'accountsChanged', accounts: [bob] }).connection?.accounts).toEqual([bob])
    expect(transition(live, { type: 'accountsChanged', accounts: [] })).toMatchObject({ status: 'disconnected', connection: undefined })
  })

  test('behavior: chainChanged updates the current chain of a live connection only', () => {
    const live = transition(initialState(1), { type: 'connected', connectorId: 'a', accounts: [alice], chainId: 1 })
    expect(transition(live, { type: 'chainChanged', chainId: 5 })).toMatchObject({ chainId: 5, connection: { chainId: 5 } })
    const idle = initialState(1)
    expect(transition(idle, { type: 'chainChanged', chainId: 5 })).toBe(idle)
  })

  test('behavior: disconnected clears connection, pending attempt and pairing URI', () => {
    const live = transition(initialState(1), { type: 'connected', connectorId: 'a', accounts: [alice], chainId: 7 })
    expect(transition(live, { type: 'disconnected' })).toEqual({
      status: 'disconnected',
      connection: undefined,
      pendingConnectorId: undefined,
      pairingUri: undefined,
      chainId: 7,
    })
  })

  test('behavior: late events of a stale wallet leave an idle state untouched', () => {
    const idle = initialState(1)
    expect(transition(idle, { type: 'accountsChanged', accounts: [alice] })).toBe(idle)
    expect(transition(idle, { type: 'pairing', uri: 'wc:x@2' })).toBe(idle)
    expect(transition(idle, { type: 'initialised' })).toBe(idle)
  })

  test('error: connected with no accounts counts as a failure', () => {
    const pending = transition(initialState(1), { type: 'connect', connectorId: 'a' })
    expect(transition(pending, { type: 'connected', connectorId: 'a', accounts: [], chainId: 1 }).status).toBe('disconnected')
  })
})
