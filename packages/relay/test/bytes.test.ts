import { expect, test } from 'vitest'
import { fieldsBytes, integerLength, messageJsonBytes, writeFields, writeInteger, writeMessageJson } from '../src/bytes.js'
import { JSON_SAFE } from '../src/schemas.js'

test('behavior: whole numbers are written as String() writes them, and their length known beforehand', () => {
  const values = [0, 1, 9, 10, 99, 100, -1, -10, 1108, 300, 2_592_000, 1_763_000_000_000, -1_763_000_000_000, Number.MAX_SAFE_INTEGER, 2 ** 31, 2 ** 32 + 1]
  for (const value of values) {
    const buffer = Buffer.alloc(24, 0x20)
    const end = writeInteger(buffer, 3, value)
    expect(buffer.toString('latin1', 3, end)).toBe(String(value))
    expect(integerLength(value)).toBe(String(value).length)
    // Nothing written outside its place.
    expect(buffer.toString('latin1', 0, 3) + buffer.toString('latin1', end)).toBe(' '.repeat(24 - (end - 3)))
  }
})

test('behavior: fields are written space after each, within the bytes reckoned for them', () => {
  const fields = ['ab'.repeat(32), 1108, -300_000, 1_763_000_000_000, 'did:key:z6Mk']
  const buffer = Buffer.alloc(fieldsBytes(fields))
  const end = writeFields(buffer, 0, fields)
  expect(buffer.toString('latin1', 0, end)).toBe(`${fields.join(' ')} `)
  expect(end).toBeLessThanOrEqual(buffer.length)
})

test('behavior: a message is written as the JSON string JSON.stringify makes, within the bytes reckoned for it', () => {
  for (const message of ['QUJD+/=', 'quote " backslash \\ newline \n nul \u0000', 'é€😀 and a lone \ud800']) {
    for (const jsonSafe of [undefined, JSON_SAFE.test(message)]) {
      const buffer = Buffer.alloc(messageJsonBytes(message, jsonSafe))
      const end = writeMessageJson(buffer, 0, message, jsonSafe)
      expect(buffer.toString('utf8', 0, end)).toBe(JSON.stringify(message))
    }
  }
})
