import { describe, expect, test } from 'vitest'
import { callsWatcher, WATCH_SCHEDULE_MS, WATCH_TIMEOUT_MS } from './callsWatch.js'

type Status = { status: number; read: number }

/** Lets every pending promise callback run: the fakes below answer in microtasks, so after this the watcher is asleep or done. */
const settled = () => new Promise((resolve) => setImmediate(resolve))

/**
 * A watcher over scripted network answers, given in order (an Error fails that read); each of its
 * waits is held until the test calls `step()`.
 */
function scripted(answers: (Status | Error | undefined)[], options: { clock?: { now: number } } = {}) {
  const reads: string[] = []
  const waits: number[] = []
  let release = () => {}
  const watcher = callsWatcher<Status>({
    async read(id) {
      reads.push(id)
      const answer = answers.shift()
      if (answer instanceof Error) throw answer
      return answer
    },
    now: () => options.clock?.now ?? 0,
    wait(ms) {
      waits.push(ms)
      return new Promise((resolve) => (release = resolve))
    },
  })
  /** Ends the watcher's current wait and lets it read, then sleep again or stop. */
  async function step() {
    await settled()
    release()
    await settled()
  }
  return { watcher, reads, waits, step, sleeping: settled }
}

describe('callsWatcher', () => {
  test('default: a batch being watched is answered from its last read, with no request, until a step reads again; a final status ends the watch', async () => {
    const { watcher, reads, waits, step, sleeping } = scripted([
      { status: 100, read: 1 },
      { status: 100, read: 2 },
      { status: 200, read: 3 },
    ])
    watcher.start('0xa')
    expect(await watcher.read('0xa')).toEqual({ status: 100, read: 1 })
    await sleeping()
    expect(await watcher.read('0xa')).toEqual({ status: 100, read: 1 })
    expect(await watcher.read('0xa')).toEqual({ status: 100, read: 1 })
    expect(reads).toEqual(['0xa'])
    await step()
    expect(await watcher.read('0xa')).toEqual({ status: 100, read: 2 })
    await step()
    expect(await watcher.read('0xa')).toEqual({ status: 200, read: 3 })
    expect(reads).toEqual(['0xa', '0xa', '0xa'])
    // Final: kept, and no more reads or waits.
    expect(await watcher.read('0xa')).toEqual({ status: 200, read: 3 })
    expect(reads).toHaveLength(3)
    expect(waits).toEqual(WATCH_SCHEDULE_MS.slice(0, 2))
  })

  test('behavior: the waits follow the schedule and repeat its last step', async () => {
    const pending = Array.from({ length: WATCH_SCHEDULE_MS.length + 3 }, (_, read) => ({ status: 100, read }))
    const { watcher, waits, step } = scripted(pending)
    watcher.start('0xa')
    for (let i = 0; i < WATCH_SCHEDULE_MS.length + 2; i++) await step()
    expect(waits.slice(0, WATCH_SCHEDULE_MS.length)).toEqual(WATCH_SCHEDULE_MS)
    expect(waits.slice(WATCH_SCHEDULE_MS.length)).toEqual([1_000, 1_000, 1_000])
  })

  test('behavior: a batch that is not watched is read from the network each time', async () => {
    const { watcher, reads } = scripted([
      { status: 100, read: 1 },
      { status: 200, read: 2 },
    ])
    expect(await watcher.read('0xb')).toEqual({ status: 100, read: 1 })
    expect(await watcher.read('0xb')).toEqual({ status: 200, read: 2 })
    expect(reads).toEqual(['0xb', '0xb'])
  })

  test('behavior: a read that fails while watching keeps the previous answer, and the next step reads again', async () => {
    const { watcher, step } = scripted([{ status: 100, read: 1 }, new Error('the bundler did not answer'), { status: 200, read: 3 }])
    watcher.start('0xa')
    await step()
    expect(await watcher.read('0xa')).toEqual({ status: 100, read: 1 })
    await step()
    expect(await watcher.read('0xa')).toEqual({ status: 200, read: 3 })
  })

  test('behavior: a first read that fails is the answer until a read succeeds', async () => {
    const { watcher, step } = scripted([new Error('the bundler did not answer'), { status: 100, read: 2 }])
    watcher.start('0xa')
    await expect(watcher.read('0xa')).rejects.toThrow('the bundler did not answer')
    await step()
    expect(await watcher.read('0xa')).toEqual({ status: 100, read: 2 })
  })

  test('behavior: past the timeout the watch stops, and a read asks the network again', async () => {
    const clock = { now: 0 }
    const { watcher, reads, step, sleeping } = scripted(
      [
        { status: 100, read: 1 },
        { status: 100, read: 2 },
        { status: 100, read: 3 },
      ],
      { clock },
    )
    watcher.start('0xa')
    await sleeping()
    clock.now = WATCH_TIMEOUT_MS
    await step()
    expect(reads).toHaveLength(2)
    expect(await watcher.read('0xa')).toEqual({ status: 100, read: 3 })
    expect(reads).toHaveLength(3)
  })

  test('behavior: starting a batch twice watches it once', async () => {
    const { watcher, reads, sleeping } = scripted([{ status: 100, read: 1 }])
    watcher.start('0xa')
    watcher.start('0xa')
    await sleeping()
    expect(reads).toEqual(['0xa'])
  })

  test('behavior: each step counts from the start of the read before: a read of 15 ms of a 20 ms step waits 5 ms, one of 30 ms is followed by the next at once, and never two at once', async () => {
    const clock = { now: 0 }
    /** How long each read takes, in ms of the clock; the fifth answers final. */
    const durations = [15, 30, 20, 5, 5]
    const started: number[] = []
    const waits: number[] = []
    let inFlight = 0
    let most = 0
    let release = () => {}
    const watcher = callsWatcher<Status>({
      async read() {
        const read = started.push(clock.now) - 1
        inFlight++
        most = Math.max(most, inFlight)
        await settled()
        clock.now += durations[read]!
        inFlight--
        return { status: read === 4 ? 200 : 100, read }
      },
      now: () => clock.now,
      wait(ms) {
        waits.push(ms)
        return new Promise((resolve) => {
          release = () => {
            release = () => {}
            clock.now += ms
            resolve()
          }
        })
      },
    })
    watcher.start('0xa')
    for (let turn = 0; turn < 50 && (await watcher.read('0xa'))?.status !== 200; turn++) {
      await settled()
      release()
    }
    expect(await watcher.read('0xa')).toEqual({ status: 200, read: 4 })
    expect(started).toEqual([0, 20, 50, 70, 90])
    expect(waits).toEqual([5, 15])
    expect(most).toBe(1)
  })
})
