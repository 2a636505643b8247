import { expect, test, vi } from 'vitest'
import { COALESCE_BELOW, coalescer, SUSTAINED_MS } from '../src/coalesce.js'

/**
 * A coalescer on a clock and a loop the test drives: `turn(frames, afterMs)` moves the clock, reads
 * that many frames, then ends the turn. `realWait` keeps the default wait, unlogged.
 */
function drive(micros: number, realWait = false) {
  const log: string[] = []
  let clock = 0
  let ends: (() => void)[] = []
  const turns = coalescer({
    micros,
    flush: () => log.push('flush'),
    now: () => clock,
    ...(realWait ? {} : { wait: (ms: number) => void log.push(`wait ${ms}`) }),
    atTurnEnd: (end) => ends.push(end),
  })
  return {
    log,
    turn(frames: number, afterMs: number) {
      clock += afterMs
      for (let index = 0; index < frames; index++) turns.read()
      const scheduled = ends
      ends = []
      for (const end of scheduled) end()
    },
  }
}

test('under sustained load a small turn is flushed, then followed by a wait of the given length; one end per turn', () => {
  const loop = drive(200)
  loop.turn(1, 10)
  // A lone turn (no turn with frames just before it): flushed, no wait.
  expect(loop.log).toEqual(['flush'])
  loop.turn(3, SUSTAINED_MS / 2)
  expect(loop.log).toEqual(['flush', 'flush', 'wait 0.2'])
})

test('a busy turn, a turn after a pause and a turn without frames get no wait', () => {
  const loop = drive(200)
  loop.turn(5, 0)
  loop.turn(COALESCE_BELOW, 0.1)
  expect(loop.log).toEqual(['flush', 'flush'])
  loop.turn(1, SUSTAINED_MS)
  expect(loop.log).toEqual(['flush', 'flush', 'flush'])
  loop.turn(0, 0.1)
  expect(loop.log).toEqual(['flush', 'flush', 'flush'])
  loop.turn(COALESCE_BELOW - 1, 0.1)
  expect(loop.log).toEqual(['flush', 'flush', 'flush', 'flush', 'wait 0.2'])
})

test('0 µs turns coalescing off: nothing is scheduled, nothing waits', () => {
  const loop = drive(0)
  for (let turn = 0; turn < 5; turn++) loop.turn(2, 0.1)
  expect(loop.log).toEqual([])
})

test('the default wait sleeps the thread (Atomics.wait) until its timeout', () => {
  const wait = vi.spyOn(Atomics, 'wait')
  try {
    const loop = drive(2_000, true)
    loop.turn(1, 0)
    expect(wait).not.toHaveBeenCalled()
    loop.turn(1, 0)
    expect(wait).toHaveBeenCalledTimes(1)
    expect(wait.mock.calls[0]!.slice(1)).toEqual([0, 0, 2])
    // Nothing wakes it: it slept the whole 2 ms.
    expect(wait.mock.results[0]).toEqual({ type: 'return', value: 'timed-out' })
  } finally {
    wait.mockRestore()
  }
})
