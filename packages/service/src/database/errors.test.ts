import { expect, test } from 'vitest'
import { SerializationFailureError, typedDatabaseError, UniqueViolationError } from './errors.js'

// The engines' codes as pg and better-sqlite3 report them; the behaviour on real engines is in
// test/database.test.ts.

test('default: engine codes map to the typed errors, anything else passes through', () => {
  const engineError = (code: string) => Object.assign(new Error(`engine said ${code}`), { code })
  for (const code of ['40001', '40P01', 'SQLITE_BUSY', 'SQLITE_BUSY_SNAPSHOT']) {
    const typed = typedDatabaseError(engineError(code))
    expect(typed).toBeInstanceOf(SerializationFailureError)
    expect(typed).toMatchObject({ code: 'serialization_failure', message: `engine said ${code}` })
  }
  for (const code of ['23505', 'SQLITE_CONSTRAINT_UNIQUE', 'SQLITE_CONSTRAINT_PRIMARYKEY'])
    expect(typedDatabaseError(engineError(code))).toBeInstanceOf(UniqueViolationError)
  const other = engineError('42P01')
  expect(typedDatabaseError(other)).toBe(other)
})
