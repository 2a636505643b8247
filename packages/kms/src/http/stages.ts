/**
 * The stages of a submission, in the order it meets them (bench:kms's profile prints them so):
 * - `http`: Hono's routing and CORS, the body read within its limit, and the body parsed;
 * - `rateLimit`: the limiter's gate and its count (a lease taken from the store now and then);
 * - `stamp`: the stamp's P-256 signature verified over the body;
 * - `authentication`: the key, its organization and the roots statement, and the checks on them;
 * - `authorization`: the kms's own rules (readable signing, fresh verification, second factor),
 *   then the permission model and the policies (grants included: a grant's key is charged here);
 * - `activity`: the fingerprint, the activity row and its insert (idempotency);
 * - `signature`: the activity's own work (for sign_raw_payload: the key unsealed, the hash, the signature);
 * - `serialisation`: the activity's view and the JSON answer;
 * - `audit`: the submission's audit event.
 */
export const STAGES = ['http', 'rateLimit', 'stamp', 'authentication', 'authorization', 'activity', 'signature', 'serialisation', 'audit'] as const
export type Stage = (typeof STAGES)[number]

/** CPU spent per stage since the profile began or was last taken: requests seen, and µs per stage. */
export type StageTotals = { requests: number; micros: Record<Stage, number> }

/** The process's CPU time so far, in µs (user and system, every thread: getrusage, to the µs on Linux). */
const processCpuMicros = () => {
  const usage = process.cpuUsage()
  return usage.user + usage.system
}

/**
 * An opt-in profile of the CPU a submission spends in each stage: a clock that each hook on the
 * request path laps (`lap` charges the CPU used since the previous lap to a stage). Off (no
 * profile given to the app) every hook is one `?.` on undefined, nothing else.
 *
 * The clock is the process's CPU time, not the wall clock, so that a core taken by other work on a
 * busy machine is not charged to a stage. A lap charges whatever ran since the previous one,
 * whichever request ran it: the figures mean something with one request in flight (bench:kms's
 * profile pass), not under concurrency. With SQLite the store's statements run on the main
 * thread, inside the stages; what runs outside the app (Node's HTTP parser and response writing,
 * the event loop between requests) is charged to no stage: bench:kms prints it as the remainder of
 * the process's CPU. V8's helper threads (garbage collection, compilation) are charged to the stage
 * they run beside.
 *
 * @example
 * const stages = createStageProfile()
 * const kms = createKms({ stageProfile: stages })
 * stages.enable(true)
 * // … one request at a time …
 * const { requests, micros } = stages.take()
 */
export type StageProfile = {
  /** Times from now on (`true`) or not (`false`, the start): off, `begin` starts no clock and every lap is a return. */
  enable(on: boolean): void
  /** A submission arrived: the clock starts (when enabled). */
  begin(): void
  /** Charges the time since the previous lap to `stage`. */
  lap(stage: Stage): void
  /** Charges the time since the previous lap to `stage` and stops the clock until the next `begin`. */
  end(stage: Stage): void
  /** The totals so far; the profile starts again from zero. */
  take(): StageTotals
}

export function createStageProfile(clock: () => number = processCpuMicros): StageProfile {
  const zero = () => Object.fromEntries(STAGES.map((stage) => [stage, 0])) as Record<Stage, number>
  let micros = zero()
  let requests = 0
  let last: number | undefined
  let enabled = false
  const lap = (stage: Stage) => {
    if (last === undefined) return
    const at = clock()
    micros[stage] += at - last
    last = at
  }
  return {
    enable(on) {
      enabled = on
      if (!on) last = undefined
    },
    begin() {
      if (!enabled) return
      requests += 1
      last = clock()
    },
    lap,
    end(stage) {
      lap(stage)
      last = undefined
    },
    take() {
      const taken = { requests, micros }
      micros = zero()
      requests = 0
      last = undefined
      return taken
    },
  }
}
