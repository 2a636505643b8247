/** A turn that read at least this many frames is busy already: no wait after it. */
export const COALESCE_BELOW = 64
/** Turns with frames closer together than this (ms) are sustained load; a lone turn gets no wait. */
export const SUSTAINED_MS = 1

export type Coalescer = {
  /** Counts a frame read in this loop iteration; the first schedules the end-of-turn check. */
  read(): void
}

export type CoalescerOptions = {
  /** How long to wait after a small turn under sustained load, in µs; 0 never waits. */
  micros: number
  /** Runs first at the end of each turn with frames: what the turn gathered leaves before any wait. */
  flush: () => void
  /** Tests replace the clock (ms) and the wait. */
  now?: () => number
  wait?: (ms: number) => void
  /** Runs `end` at the end of the loop iteration. Default `setImmediate`. */
  atTurnEnd?: (end: () => void) => void
}

/**
 * Interrupt coalescing for the event loop. Under sustained load that does not fill the relay
 * (most of the time: clients, not the relay, set the pace), each loop iteration finds one or two
 * sockets ready with a frame or two each, and pays a poll, a read, a callback into JavaScript and a
 * microtask checkpoint for them: about as much as the relay's own work per message. After such a
 * turn (fewer than COALESCE_BELOW frames, within SUSTAINED_MS of the last turn with frames) the
 * thread waits `micros` (its frames already written out), and the next turn reads at once what
 * arrived meanwhile. The wait is a sleep (`Atomics.wait`), not a spin: the CPU is free meanwhile. A
 * busy relay never waits (its turns are large), nor does one that gets a lone frame now and then.
 */
export function coalescer(options: CoalescerOptions): Coalescer {
  const { micros, flush } = options
  if (!(micros > 0)) return { read() {} }
  const now = options.now ?? performance.now.bind(performance)
  const cell = new Int32Array(new SharedArrayBuffer(4))
  const wait = options.wait ?? ((ms: number) => void Atomics.wait(cell, 0, 0, ms))
  const atTurnEnd = options.atTurnEnd ?? setImmediate
  let frames = 0
  let lastTurn = Number.NEGATIVE_INFINITY
  const end = () => {
    const read = frames
    frames = 0
    flush()
    const at = now()
    const sustained = at - lastTurn < SUSTAINED_MS
    lastTurn = at
    if (read < COALESCE_BELOW && sustained) wait(micros / 1000)
  }
  return {
    read() {
      if (frames++ === 0) atTurnEnd(end)
    },
  }
}
