// Entry point of @latchkey/service/database: the storage the kms and the backend share (servers
// only; kept out of the main entry so that nothing else loads better-sqlite3, pg or Kysely).
export {
  type AuditEventInput,
  type AuditEventRow,
  type AuditOutcome,
  type AuditStorage,
  type AuditTrail,
  type AuditTrailOptions,
  type AuditVerification,
  auditHash,
  auditMigration,
  auditTable,
  createAuditTrail,
  GENESIS_HASH,
  keyedHash,
  verifyAuditTrail,
} from './database/audit.js'
export { type MigrationCommandOptions, migrationCommands } from './database/commands.js'
export { databaseTarget, type GroupCommit, type ImmediateStatements, type RunStatement } from './database/connection.js'
export { DatabaseError, MigrationError, RetriesExhaustedError, SerializationFailureError, UniqueViolationError } from './database/errors.js'
export {
  type AppliedMigration,
  type MigrationStatus,
  type MigrationTarget,
  migrationStatus,
  runMigrations,
} from './database/migrations.js'
export { type Database, type DatabaseDialect, type IsolationLevel, type Migration, type OpenDatabaseOptions, openDatabase } from './database/open.js'
