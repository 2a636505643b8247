import { expect, test } from 'vitest'
import { integerLength, writeInteger } from '../src/bytes.js'

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
