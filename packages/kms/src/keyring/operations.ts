import { randomBytes } from 'node:crypto'
import { performance } from 'node:perf_hooks'
import { setTimeout as delay } from 'node:timers/promises'
import type { Db } from '../db.js'
import { SEALED_COLUMNS } from '../storage/dataKeys.js'
import type { Kek } from './kek.js'
import type { Keyring } from './keyring.js'

// The operator's key commands (`latchkey-kms keys …`, `verify-backup`) on an open database and
// its loaded keyring. Each runs online: instances keep sealing and opening while it works.

/** `keys status`: the data keys, which is active and which this KEK unwraps, and how many rows each seals (`v1`: the master key directly). */
export async function keyStatus(db: Db, keyring: Keyring) {
  await keyring.refresh()
  return { kek: keyring.kek.id, dataKeys: keyring.dataKeys(), sealedRows: await db.sealedCounts() }
}

/**
 * `keys rotate`: a new data key, wrapped by the KEK. It seals once every instance has read it
 * (two refresh intervals); until then the current key goes on sealing.
 */
export async function rotateDataKey(db: Db, keyring: Keyring, now: () => number = Date.now) {
  const id = `dek_${randomBytes(8).toString('hex')}`
  const key = randomBytes(32)
  const wrapped = Buffer.from(await keyring.kek.wrap(id, key)).toString('base64')
  key.fill(0)
  await db.insertDataKey({ id, kek_id: keyring.kek.id, wrapped, created_at: now() })
  await keyring.refresh()
  return { dataKey: id, kek: keyring.kek.id, activeInMs: keyring.untilNewestActive() }
}

export type RewrapProgress = { table: string; moved: number }

/**
 * How `keys rewrap` shares the database and the CPU with the instances that sign: small batches,
 * each its own short transaction, and a rest after each batch so the rewrap works at most
 * `dutyCycle` of the time (a batch of 5 ms at 0.2 rests 20 ms). Measured by `npm run bench:rewrap`.
 */
export const REWRAP_DEFAULTS = { batchSize: 50, dutyCycle: 0.2 } as const

/**
 * `keys rewrap`: reseals every row that is not under the active data key (older data keys, or the
 * master key's `v1` format) with it, `batchSize` rows per transaction. Each row is replaced only
 * if it did not change since it was read, so a concurrent write is never lost (the next pass sees
 * it). Nothing is kept between runs: a run cut short is resumed by running it again. Waits first
 * until the newest data key is active, so every instance can open what it writes. Between batches
 * it rests (`dutyCycle`, see REWRAP_DEFAULTS), so signing goes on at nearly its idle pace.
 */
export async function rewrapRows(
  db: Db,
  keyring: Keyring,
  options: { batchSize: number; dutyCycle?: number | undefined; onBatch?: ((progress: RewrapProgress) => void) | undefined },
) {
  const dutyCycle = options.dutyCycle ?? REWRAP_DEFAULTS.dutyCycle
  if (!(dutyCycle > 0 && dutyCycle <= 1)) throw new RangeError(`dutyCycle must be more than 0 and at most 1, got ${dutyCycle}`)
  await keyring.refresh()
  // A timer may fire a millisecond before the wall clock says the key is active: wait until it says so.
  for (let wait = keyring.untilNewestActive(); wait > 0; wait = keyring.untilNewestActive()) await delay(wait)
  const target = keyring.currentId()
  let moved = 0
  // Rows written under an older key by an instance that had not read the new one yet are caught by a later pass.
  for (let pass = 0; ; pass++) {
    let movedThisPass = 0
    for (const column of SEALED_COLUMNS) {
      let after = ''
      for (;;) {
        const started = performance.now()
        const rows = await db.sealedRows(column, { after, limit: options.batchSize, notUnder: target })
        if (!rows.length) break
        const resealed = rows.map((row) => {
          const record = column.record(row.key)
          const plaintext = keyring.openBytes(record, row.sealed)
          const sealed = keyring.seal(record, plaintext)
          plaintext.fill(0)
          return { ...row, resealed: sealed }
        })
        const count = await db.transaction(async (trx) => {
          let replaced = 0
          for (const row of resealed) if (await trx.replaceSealed(column, row.key, row.sealed, row.resealed)) replaced++
          return replaced
        })
        movedThisPass += count
        after = rows[rows.length - 1]!.key
        options.onBatch?.({ table: column.table, moved: moved + movedThisPass })
        // The rest: the event loop (in-process signing) and the database (other writers) get the time back.
        const worked = performance.now() - started
        await delay((worked * (1 - dutyCycle)) / dutyCycle)
      }
    }
    moved += movedThisPass
    if (!movedThisPass || pass >= 20) break
  }
  const left = (await db.sealedCounts()).filter((count) => count.dataKey !== target).reduce((sum, count) => sum + count.rows, 0)
  return { dataKey: target, moved, left }
}

/**
 * `keys rotate-kek`: wraps every data key the current KEK unwraps by `next` instead. The data keys
 * and the rows stay as they are; instances started with the old KEK keep the keys they unwrapped,
 * and are restarted with the new one.
 */
export async function rotateKek(db: Db, keyring: Keyring, next: Kek) {
  const rows = await db.dataKeys()
  const rewrapped: string[] = []
  for (const row of rows) {
    if (row.kek_id !== keyring.kek.id) continue
    const key = await keyring.kek.unwrap(row.id, Buffer.from(row.wrapped, 'base64'))
    const wrapped = Buffer.from(await next.wrap(row.id, key)).toString('base64')
    Buffer.from(key.buffer, key.byteOffset, key.byteLength).fill(0)
    if (await db.rewrapDataKey(row.id, keyring.kek.id, next.id, wrapped)) rewrapped.push(row.id)
  }
  const stranded = rows.filter((row) => row.kek_id !== keyring.kek.id && row.kek_id !== next.id).map((row) => ({ dataKey: row.id, kek: row.kek_id }))
  return { from: keyring.kek.id, to: next.id, rewrapped, stranded }
}

/**
 * `verify-backup`: opens every sealed row with the keyring; the first that does not open is named
 * (table, column, key) with why.
 */
export async function verifySealedRows(db: Db, keyring: Keyring) {
  let opened = 0
  for (const column of SEALED_COLUMNS) {
    let after = ''
    for (;;) {
      const rows = await db.sealedRows(column, { after, limit: 500 })
      if (!rows.length) break
      for (const row of rows) {
        try {
          keyring.openBytes(column.record(row.key), row.sealed).fill(0)
        } catch (error) {
          return { intact: false as const, opened, failed: { table: column.table, column: column.column, key: row.key, problem: (error as Error).message } }
        }
        opened++
      }
      after = rows[rows.length - 1]!.key
    }
  }
  return { intact: true as const, opened }
}
