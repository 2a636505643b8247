/**
 * A whole-number option of a bench script (`--rounds 3`), or its default; anything else stops the
 * script before it starts anything.
 *
 * @example
 * const rounds = wholeNumberArg('--rounds', 3)
 */
export function wholeNumberArg(name: string, fallback: number): number {
  const index = process.argv.indexOf(name)
  const value = index > 0 ? Number(process.argv[index + 1]) : fallback
  if (!Number.isInteger(value) || value < 1) throw new Error(`${name} must be a positive whole number`)
  return value
}
