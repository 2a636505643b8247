type Listener<data> = (data: data) => void

/** Typed events with `on` (returns its own off), `once` and `emit`. */
export type Emitter<events extends Record<string, unknown>> = {
  on<name extends keyof events>(name: name, listener: Listener<events[name]>): () => void
  once<name extends keyof events>(name: name, listener: Listener<events[name]>): () => void
  emit<name extends keyof events>(name: name, data: events[name]): void
  listenerCount(name: keyof events): number
}

/**
 * @example
 * const events = createEmitter<{ session_delete: { topic: string } }>()
 * events.once('session_delete', ({ topic }) => forget(topic))
 */
export function createEmitter<events extends Record<string, unknown>>(): Emitter<events> {
  const byName = new Map<keyof events, Set<Listener<never>>>()
  const self: Emitter<events> = {
    on(name, listener) {
      let set = byName.get(name)
      if (!set) byName.set(name, (set = new Set()))
      set.add(listener as Listener<never>)
      return () => void set.delete(listener as Listener<never>)
    },
    once(name, listener) {
      const off = self.on(name, (data) => (off(), listener(data)))
      return off
    },
    emit(name, data) {
      for (const listener of [...(byName.get(name) ?? [])]) (listener as Listener<unknown>)(data)
    },
    listenerCount: (name) => byName.get(name)?.size ?? 0,
  }
  return self
}
