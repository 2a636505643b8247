// The batches this page sent, watched by the wallet itself until they are final, so the app's
// `wallet_getCallsStatus` is answered in the page: the app may ask often (the embedded connector
// says 25 ms) while the chain or the bundler is asked on a schedule that starts fast, when a local
// or rollup chain includes a batch within a few hundred ms, and backs off to once a second.

/** An EIP-5792 status as `wallet_getCallsStatus` answers it: 100 while pending, 200 and up once final. */
export type CallsStatus = { status: number }

/**
 * The steps between the starts of two reads of a pending batch, in ms; the last one repeats. The
 * wait after a read is its step less the read's own time, none when the read took longer: never
 * two reads of a batch at once, and never more often than the schedule.
 */
export const WATCH_SCHEDULE_MS: readonly number[] = [20, 20, 20, 20, 40, 40, 80, 160, 320, 640, 1_000]
/** How long a batch is watched before the wallet stops asking on its own (a read then asks the network again). */
export const WATCH_TIMEOUT_MS = 120_000
/** Final statuses kept for later reads, the oldest dropped first. */
const KEPT = 64

type Watch<status> = {
  /** The last read that answered (or the first one, while it runs). */
  latest: Promise<status | undefined>
  final: boolean
}

const settles = (promise: Promise<unknown>) =>
  promise.then(
    () => true,
    () => false,
  )

/**
 * Watches batches by id: `start` begins reading a batch's status on {@link WATCH_SCHEDULE_MS}
 * (each step from the start of the read before) until it is final (200 and up) or
 * {@link WATCH_TIMEOUT_MS} passes; `read` answers the last status read for a batch being watched,
 * without a request, and asks the network (the watcher's `read`) for any other. A read that fails while watching is tried again at the next step, the
 * previous answer kept.
 */
export function callsWatcher<status extends CallsStatus>(options: {
  read(id: string): Promise<status | undefined>
  now?: () => number
  wait?: (ms: number) => Promise<void>
}) {
  const watches = new Map<string, Watch<status>>()
  const now = options.now ?? Date.now
  const wait = options.wait ?? ((ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms)))

  const keepFinal = (id: string) => {
    const finals = [...watches].filter(([, watch]) => watch.final)
    for (const [oldest] of finals.slice(0, Math.max(0, finals.length - KEPT))) if (oldest !== id) watches.delete(oldest)
  }

  async function follow(id: string, watch: Watch<status>, readAt: number) {
    const deadline = now() + WATCH_TIMEOUT_MS
    for (let step = 0; ; step++) {
      const status = await watch.latest.catch(() => undefined)
      if (status && status.status >= 200) {
        watch.final = true
        keepFinal(id)
        return
      }
      if (now() >= deadline) {
        watches.delete(id)
        return
      }
      // The step counts from the start of the last read, which has answered by now.
      const pause = WATCH_SCHEDULE_MS[Math.min(step, WATCH_SCHEDULE_MS.length - 1)]! - (now() - readAt)
      if (pause > 0) await wait(pause)
      readAt = now()
      const next = options.read(id)
      if ((await settles(next)) || !(await settles(watch.latest))) watch.latest = next
    }
  }

  return {
    /** Begins watching a batch this wallet just sent. */
    start(id: string): void {
      if (watches.has(id)) return
      const readAt = now()
      const watch: Watch<status> = { latest: options.read(id), final: false }
      watches.set(id, watch)
      void follow(id, watch, readAt)
    },
    /** The batch's status: the watch's last read while it is watched, else the network's. */
    read(id: string): Promise<status | undefined> {
      return watches.get(id)?.latest ?? options.read(id)
    },
  }
}
