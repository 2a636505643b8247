/**
 * Writing ASCII text and whole numbers straight into a buffer, for the frames and rows the relay
 * builds by hand: a template string of a push or a row would be a chain of concatenations, copied
 * into one flat string only to be copied again into the buffer, and all of it garbage at once.
 */

import { JSON_SAFE } from './schemas.js'

/** The most bytes a whole number written here takes: a safe integer's 16 digits and a sign. */
export const INTEGER_BYTES = 17

/** The most bytes `writeMessageJson` writes for `message`: JSON escapes at most 6 bytes per UTF-16 unit. */
export const messageJsonBytes = (message: string, jsonSafe: boolean | undefined) => (jsonSafe ? message.length : 6 * message.length) + 2

/**
 * Writes `message` as a JSON string at `at`; answers where it ends. A `JSON_SAFE` message (base64,
 * hex: most) goes between quotes as it is, not through `JSON.stringify`.
 */
export function writeMessageJson(buffer: Buffer, at: number, message: string, jsonSafe: boolean | undefined): number {
  if (!(jsonSafe ?? JSON_SAFE.test(message))) return at + buffer.write(JSON.stringify(message), at)
  buffer[at++] = 0x22
  at += buffer.write(message, at, 'latin1')
  buffer[at++] = 0x22
  return at
}

/** The most bytes `writeFields` writes for `fields`. */
export function fieldsBytes(fields: readonly (string | number)[]): number {
  let most = 0
  for (const field of fields) most += (typeof field === 'string' ? field.length : INTEGER_BYTES) + 1
  return most
}

/**
 * Writes each field and a space after it at `at`: text (ASCII: ids, topics, client ids) as it is,
 * numbers as whole numbers. Answers where they end.
 */
export function writeFields(buffer: Buffer, at: number, fields: readonly (string | number)[]): number {
  for (const field of fields) {
    at = typeof field === 'string' ? at + buffer.write(field, at, 'latin1') : writeInteger(buffer, at, field)
    buffer[at++] = 0x20
  }
  return at
}

/** Digits of a whole number, with its sign. */
export function integerLength(value: number): number {
  let length = value < 0 ? 2 : 1
  for (let rest = Math.abs(value); rest >= 10; rest = Math.floor(rest / 10)) length++
  return length
}

/** Writes a whole number's decimal digits (and sign) at `at`; answers where they end. */
export function writeInteger(buffer: Uint8Array, at: number, value: number): number {
  let rest = value
  if (rest < 0) {
    buffer[at++] = 0x2d
    rest = -rest
  }
  const end = at + integerLength(rest)
  for (let index = end - 1; index >= at; index--) {
    buffer[index] = 0x30 + (rest % 10)
    rest = Math.floor(rest / 10)
  }
  return end
}
