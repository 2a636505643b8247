/**
 * Every failure the database module reports: the query's engine error is in `cause`. Branch on the
 * subclasses, never on a message.
 *
 * @example
 * try {
 *   await database.db.insertInto('accounts').values(row).execute()
 * } catch (error) {
 *   if (error instanceof UniqueViolationError) return conflict()
 *   throw error
 * }
 */
export class DatabaseError extends Error {
  override name = 'DatabaseError'
  /** What went wrong, for logs and for callers that map errors to an answer. */
  readonly code: 'unique_violation' | 'serialization_failure' | 'retries_exhausted' | 'migration' | 'unsupported_url'
  constructor(code: DatabaseError['code'], message: string, options?: { cause?: unknown }) {
    super(message, options)
    this.code = code
  }
}

/** A row would break a primary key or unique index (PostgreSQL 23505, SQLite's UNIQUE / PRIMARY KEY constraint). */
export class UniqueViolationError extends DatabaseError {
  override name = 'UniqueViolationError'
  constructor(message: string, options?: { cause?: unknown }) {
    super('unique_violation', message, options)
  }
}

/**
 * The engine gave up on a transaction because of another one: PostgreSQL's serialization failure
 * (40001) or deadlock (40P01), SQLite's SQLITE_BUSY. `transaction()` runs the work again; a
 * statement outside a transaction may simply be repeated.
 */
export class SerializationFailureError extends DatabaseError {
  override name = 'SerializationFailureError'
  constructor(message: string, options?: { cause?: unknown }) {
    super('serialization_failure', message, options)
  }
}

/** `transaction()` met a serialization failure on every one of its attempts; `cause` is the last one. */
export class RetriesExhaustedError extends DatabaseError {
  override name = 'RetriesExhaustedError'
  constructor(
    readonly attempts: number,
    options?: { cause?: unknown },
  ) {
    super('retries_exhausted', `The transaction conflicted with others ${attempts} times in a row; gave up`, options)
  }
}

/** The migrations could not run, or the database was migrated by a newer version of the service. */
export class MigrationError extends DatabaseError {
  override name = 'MigrationError'
  constructor(message: string, options?: { cause?: unknown }) {
    super('migration', message, options)
  }
}

/** The engine's error code: PostgreSQL's SQLSTATE or better-sqlite3's SQLITE_* code. */
const codeOf = (error: unknown) =>
  typeof error === 'object' && error !== null && typeof (error as { code?: unknown }).code === 'string' ? (error as { code: string }).code : ''

/**
 * The typed error for an engine error, or the error itself when it is none of ours.
 * @internal
 */
export function typedDatabaseError(error: unknown): unknown {
  if (error instanceof DatabaseError) return error
  const code = codeOf(error)
  const message = error instanceof Error ? error.message : String(error)
  if (code === '23505' || code === 'SQLITE_CONSTRAINT_UNIQUE' || code === 'SQLITE_CONSTRAINT_PRIMARYKEY')
    return new UniqueViolationError(message, { cause: error })
  if (code === '40001' || code === '40P01' || code.startsWith('SQLITE_BUSY')) return new SerializationFailureError(message, { cause: error })
  return error
}
