/** A minimal typed event emitter: one listener set per event name. */
export type Emitter<events extends Record<string, unknown>> = {
  on<name extends keyof events>(name: name, listener: (data: events[name]) => void): () => void
  emit<name extends keyof events>(name: name, data: events[name]): void
  listenerCount(name: keyof events): number
}

/**
 * @example
 * const emitter = createEmitter<{ change: { chainId: number } }>()
 * const off = emitter.on('change', ({ chainId }) => console.log(chainId))
 */
export function createEmitter<events extends Record<string, unknown>>(): Emitter<events> {
  const listeners = new Map<keyof events, Set<(data: never) => void>>()
  return {
    on(name, listener) {
      const set = listeners.get(name) ?? new Set()
      set.add(listener as (data: never) => void)
      listeners.set(name, set)
      return () => void set.delete(listener as (data: never) => void)
    },
    emit(name, data) {
      for (const listener of [...(listeners.get(name) ?? [])]) (listener as (data: unknown) => void)(data)
    },
    listenerCount: (name) => listeners.get(name)?.size ?? 0,
  }
}
