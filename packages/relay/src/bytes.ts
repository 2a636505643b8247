/**
 * Writing ASCII text and whole numbers straight into a buffer, for the frames and rows the relay
 * builds by hand: a template string of a push or a row would be a chain of concatenations, copied
 * into one flat string only to be copied again into the buffer, and all of it garbage at once.
 */

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
