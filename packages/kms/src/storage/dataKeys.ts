import { type RawBuilder, sql } from 'kysely'
import type { Executor } from './database.js'

/** A data key as stored: wrapped by the KEK named `kek_id` (keyring/kek.ts). */
export type DataKeyRow = { id: string; kek_id: string; wrapped: string; created_at: number }

/**
 * Every column that holds sealed key material, with the key column of its table and the record id
 * the value is sealed to (secrets.ts's associated data). Rewrap, status and verify-backup walk these.
 */
export const SEALED_COLUMNS = [
  { table: 'wallets', key: 'id', column: 'sealed_mnemonic', record: (id: string) => id },
  { table: 'wallet_accounts', key: 'id', column: 'sealed_private_key', record: (id: string) => `wallet-account:${id}` },
  { table: 'private_keys', key: 'id', column: 'sealed_private_key', record: (id: string) => `private-key:${id}` },
  { table: 'import_targets', key: 'user_id', column: 'sealed_private_key', record: (id: string) => `import:${id}` },
  { table: 'outbox', key: 'id', column: 'sealed_mail', record: (id: string) => `outbox:${id}` },
] as const

export type SealedColumn = (typeof SEALED_COLUMNS)[number]
export type SealedRow = { key: string; sealed: string }

/** The prefix of a value sealed under data key `dekId` (secrets.ts's v2 format). */
export const sealedPrefix = (dekId: string) => `v2:${dekId}:`

/**
 * The statements of the key hierarchy: data keys, and the sealed rows they open, read and
 * rewritten in batches by key order.
 */
export function dataKeyStatements(dialect: 'sqlite' | 'postgres', executor: () => Promise<Executor>) {
  const find = (text: RawBuilder<unknown>) => (dialect === 'postgres' ? sql`strpos(${text}, ':')` : sql`instr(${text}, ':')`)
  const rows = async <row>(query: RawBuilder<row>) => (await query.execute(await executor())).rows
  return {
    dataKeys: () => rows<DataKeyRow>(sql`select id, kek_id, wrapped, created_at from data_keys order by created_at, id`),
    /** Adds a data key unless one has its id (the first key's id is fixed, so instances starting together agree on it). */
    insertDataKey: async (row: DataKeyRow) => {
      await sql`insert into data_keys (id, kek_id, wrapped, created_at) values (${row.id}, ${row.kek_id}, ${row.wrapped}, ${row.created_at}) on conflict (id) do nothing`.execute(
        await executor(),
      )
    },
    /** Rewraps a data key under another KEK, unless another run did first. */
    rewrapDataKey: async (id: string, fromKekId: string, toKekId: string, wrapped: string) => {
      const result = await sql`update data_keys set kek_id = ${toKekId}, wrapped = ${wrapped} where id = ${id} and kek_id = ${fromKekId}`.execute(
        await executor(),
      )
      return Number(result.numAffectedRows ?? 0n) === 1
    },
    /** Up to `limit` sealed values of `column` after key `after` (in key order), all of them or only those not sealed under `dekId`. */
    sealedRows: (column: SealedColumn, options: { after: string; limit: number; notUnder?: string | undefined }) =>
      rows<SealedRow>(
        sql`select ${sql.ref(column.key)} as key, ${sql.ref(column.column)} as sealed from ${sql.table(column.table)}
            where ${sql.ref(column.column)} is not null and ${sql.ref(column.key)} > ${options.after}
            ${options.notUnder ? sql`and ${sql.ref(column.column)} not like ${`${sealedPrefix(options.notUnder)}%`}` : sql``}
            order by ${sql.ref(column.key)} limit ${options.limit}`,
      ),
    /**
     * Replaces one sealed value, unless it changed since it was read (a concurrent write wins and
     * the next pass sees it): answers whether it was replaced.
     */
    replaceSealed: async (column: SealedColumn, key: string, from: string, to: string) => {
      const result =
        await sql`update ${sql.table(column.table)} set ${sql.ref(column.column)} = ${to} where ${sql.ref(column.key)} = ${key} and ${sql.ref(column.column)} = ${from}`.execute(
          await executor(),
        )
      return Number(result.numAffectedRows ?? 0n) === 1
    },
    /** How many values of each column are sealed under each data key (`v1` for the master key's own format). */
    sealedCounts: async () => {
      const counts: { table: string; column: string; dataKey: string; rows: number }[] = []
      for (const column of SEALED_COLUMNS) {
        const found = await rows<{ data_key: string; rows: number | string }>(
          sql`select case when ${sql.ref(column.column)} like 'v2:%' then substr(${sql.ref(column.column)}, 4, ${find(sql`substr(${sql.ref(column.column)}, 4)`)} - 1) else 'v1' end as data_key, count(*) as rows
              from ${sql.table(column.table)} where ${sql.ref(column.column)} is not null group by 1 order by 1`,
        )
        for (const row of found) counts.push({ table: column.table, column: column.column, dataKey: row.data_key, rows: Number(row.rows) })
      }
      return counts
    },
  }
}

export type DataKeyStatements = ReturnType<typeof dataKeyStatements>
