import { expect, test } from 'vitest'

test('default: exports', async () => {
  expect(Object.keys(await import('./database.js')).sort()).toMatchInlineSnapshot(`
    [
      "DatabaseError",
      "MigrationError",
      "RetriesExhaustedError",
      "SerializationFailureError",
      "UniqueViolationError",
      "databaseTarget",
      "openDatabase",
    ]
  `)
})
