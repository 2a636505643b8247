import { expect, test } from 'vitest'

test('default: exports', async () => {
  expect(Object.keys(await import('./database.js')).sort()).toMatchInlineSnapshot(`
    [
      "DatabaseError",
      "GENESIS_HASH",
      "MigrationError",
      "RetriesExhaustedError",
      "SerializationFailureError",
      "UniqueViolationError",
      "auditHash",
      "auditMigration",
      "auditTable",
      "createAuditTrail",
      "databaseTarget",
      "keyedHash",
      "migrationCommands",
      "migrationStatus",
      "openDatabase",
      "runMigrations",
      "verifyAuditTrail",
    ]
  `)
})
