import type { Client, Hex } from '@latchkey/core'
import { useCallback, useSyncExternalStore } from 'react'

export type TrackedStatus = 'pending' | 'confirmed' | 'failed'

/** A transaction or a batch the app sent through the hooks, as the toasts and the account modal show it. */
export type TrackedTransaction = {
  readonly id: number
  readonly kind: 'transaction' | 'calls'
  readonly status: TrackedStatus
  /** The chain it was sent on, for the explorer link. */
  readonly chainId: number | undefined
  /** The transaction's hash; for a batch, its last receipt's once confirmed. */
  readonly hash?: Hex | undefined
  /** Why it failed: the wallet's or the chain's error; undefined with `reverted`. */
  readonly error?: unknown
  /** Mined, but reverted (or the batch reported failure). */
  readonly reverted?: boolean | undefined
  /** Sends the same again. */
  readonly retry?: (() => void) | undefined
  readonly dismissed?: boolean | undefined
}

type Store = { list: readonly TrackedTransaction[]; listeners: Set<() => void>; next: number }

/** The most a client remembers: the oldest leave first. */
export const MAX_TRACKED = 10

const stores = new WeakMap<Client, Store>()

function storeOf(client: Client): Store {
  let store = stores.get(client)
  if (!store) stores.set(client, (store = { list: [], listeners: new Set(), next: 0 }))
  return store
}

function publish(store: Store, list: readonly TrackedTransaction[]) {
  store.list = list
  for (const listener of [...store.listeners]) listener()
}

/** @internal Records a send that has started; returns its id. */
export function trackTransaction(client: Client, entry: Omit<TrackedTransaction, 'id' | 'status'>): number {
  const store = storeOf(client)
  const id = ++store.next
  publish(store, [...store.list, { ...entry, id, status: 'pending' as const }].slice(-MAX_TRACKED))
  return id
}

/** @internal Changes a tracked send (an id no longer remembered is ignored). */
export function updateTransaction(client: Client, id: number, patch: Partial<Omit<TrackedTransaction, 'id' | 'kind'>>) {
  const store = storeOf(client)
  if (!store.list.some((entry) => entry.id === id)) return
  publish(
    store,
    store.list.map((entry) => (entry.id === id ? { ...entry, ...patch } : entry)),
  )
}

/** @internal The client's tracked sends, oldest first, re-rendering on each change. */
export function useTrackedTransactions(client: Client): readonly TrackedTransaction[] {
  const subscribe = useCallback(
    (listener: () => void) => {
      const { listeners } = storeOf(client)
      listeners.add(listener)
      return () => void listeners.delete(listener)
    },
    [client],
  )
  const snapshot = () => storeOf(client).list
  return useSyncExternalStore(subscribe, snapshot, snapshot)
}
