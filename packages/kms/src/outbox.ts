import { randomUUID } from 'node:crypto'
import type { Logger } from '@latchkey/service'
import type { Db } from './db.js'
import type { Mail, Mailer } from './mail.js'
import { open, type SealingKey, seal } from './secrets.js'
import type { OutboxRow } from './storage/tables.js'

/**
 * Mail leaves after the activity that sends it has committed, through the outbox: the activity's
 * transaction writes the message (sealed: it may carry a credential bundle), and once it commits
 * the message is sent. A message that cannot be sent now stays and is retried, with backoff, by
 * every instance until it goes out or is no use any more (its credential expired); a refusal for
 * good (SMTP 5xx) ends its tries. The activity stays COMPLETED throughout: what it stored is only
 * usable with the mail, and the mail is on its way.
 */

/** A sign-in or recovery mail is no use after this long (the credentials it carries live 15 minutes). */
export const OUTBOX_MAIL_TTL_MS = 15 * 60_000
/** How long a claimed message is left to its sender before another instance may try it. */
const CLAIM_MS = 60_000
const backoffMs = (attempts: number) => Math.min(60_000, 1000 * 2 ** (attempts - 1))
const record = (id: string) => `outbox:${id}`

/** Writes `mail` to the outbox in the transaction `db` belongs to; `send` it after the commit. */
export async function enqueueMail(db: Db, masterKey: SealingKey, mail: Mail, activityId: string | null, at: number): Promise<void> {
  const id = randomUUID()
  await db.insertOutbox({
    id,
    activity_id: activityId,
    to_address: mail.to,
    sealed_mail: seal(masterKey, record(id), JSON.stringify(mail)),
    status: 'pending',
    attempts: 0,
    next_attempt_at: at,
    last_error: null,
    created_at: at,
    expires_at: at + OUTBOX_MAIL_TTL_MS,
  })
}

/** Whether a send failed for good: the SMTP server refused (5xx), so trying again cannot help. */
function isPermanent(error: unknown): boolean {
  const code = (error as { cause?: { responseCode?: unknown } } | null)?.cause?.responseCode
  return typeof code === 'number' && code >= 500 && code < 600
}

export type OutboxOptions = { db: Db; mailer: Mailer; masterKey: SealingKey; now: () => number; logger?: Logger | undefined }

/**
 * The sender side of the outbox: `sendFor(activityId)` right after an activity commits, `sendDue()`
 * for whatever is due (a timer runs it every few seconds while the kms is started).
 *
 * @example
 * const outbox = createOutbox({ db, mailer, masterKey, now: Date.now })
 * await outbox.sendFor(activity.id)
 */
export function createOutbox(options: OutboxOptions) {
  const { db, mailer, masterKey, now } = options
  let timer: ReturnType<typeof setInterval> | undefined
  let running: Promise<unknown> = Promise.resolve()

  /** Sends one due message if this instance claims it; true when it went out. */
  async function attempt(row: OutboxRow): Promise<boolean> {
    const at = now()
    if (row.status !== 'pending' || row.next_attempt_at > at) return false
    if (!(await db.claimOutbox(row.id, row.next_attempt_at, at + CLAIM_MS))) return false
    const attempts = row.attempts + 1
    if (row.expires_at <= at) {
      await db.failOutbox(row.id, row.attempts, 'expired before it could be sent')
      return false
    }
    try {
      await mailer.send(JSON.parse(open(masterKey, record(row.id), row.sealed_mail)) as Mail)
    } catch (error) {
      const message = (error as Error).message
      if (isPermanent(error)) await db.failOutbox(row.id, attempts, message)
      else await db.retryOutbox(row.id, attempts, at + backoffMs(attempts), message)
      options.logger?.warn({ outboxId: row.id, attempts }, `mail not sent: ${message}`)
      return false
    }
    await db.deleteOutbox(row.id)
    return true
  }

  return {
    /** Sends the messages an activity just committed; what fails stays for the retries. */
    async sendFor(activityId: string): Promise<void> {
      for (const row of await db.outboxOfActivity(activityId)) await attempt(row)
    },
    /** Sends every message that is due; answers how many went out. */
    async sendDue(): Promise<number> {
      let sent = 0
      for (const row of await db.dueOutbox(now(), 100)) if (await attempt(row)) sent++
      return sent
    },
    start(intervalMs = 5000) {
      timer ??= setInterval(() => {
        running = running.then(() => this.sendDue()).catch((error: Error) => options.logger?.error({ err: error }, `outbox: ${error.message}`))
      }, intervalMs)
      timer.unref()
    },
    async stop() {
      if (timer) clearInterval(timer)
      timer = undefined
      await running
    },
  }
}

export type Outbox = ReturnType<typeof createOutbox>
