/** One prepared statement, with `?` placeholders; rows come back as plain objects. */
export type SqlStatement = {
  get(...parameters: unknown[]): unknown
  all(...parameters: unknown[]): unknown[]
  run(...parameters: unknown[]): void
}

/**
 * The synchronous SQL connection db.ts and adminDb.ts write their statements against: SQLite
 * (better-sqlite3) or PostgreSQL (postgres.ts). Statements are written in SQLite's dialect; the
 * PostgreSQL connection translates the few differences.
 *
 * @internal
 */
export type SqlDatabase = {
  readonly dialect: 'sqlite' | 'postgres'
  prepare(sql: string): SqlStatement
  /** Runs statements separated by semicolons, without parameters. */
  exec(sql: string): void
  /** Runs `work` in a transaction (a savepoint when nested); commits when it returns, rolls back when it throws. */
  transaction<result>(work: () => result): result
  close(): void
}

/** Whether `location` names a PostgreSQL database (a postgres:// or postgresql:// URL) rather than a SQLite file. */
export const isPostgresUrl = (location: string) => /^postgres(ql)?:\/\//i.test(location)
