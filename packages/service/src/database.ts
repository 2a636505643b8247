// Entry point of @latchkey/service/database: the storage the kms and the backend share (servers
// only; kept out of the main entry so that nothing else loads better-sqlite3, pg or Kysely).
export { DatabaseError, MigrationError, RetriesExhaustedError, SerializationFailureError, UniqueViolationError } from './database/errors.js'
export {
  type Database,
  type DatabaseDialect,
  databaseTarget,
  type IsolationLevel,
  type Migration,
  type OpenDatabaseOptions,
  openDatabase,
} from './database/open.js'
