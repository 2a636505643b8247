/*
 * A small schema layer for what peers send. Every message from the relay is decrypted text from a
 * party we do not control; it is checked against one of these before any field is read, so the
 * handlers below work on typed values and a malformed message is dropped in one place.
 *
 * Deliberately tiny (a few combinators, no transforms): the protocol loads in the browser and
 * zod or valibot would cost more than the protocol itself.
 *
 * @internal
 */

export type Issue = { path: string; message: string }
export type Result<value> = { ok: true; value: value } | { ok: false; issue: Issue }
export type Schema<value> = { readonly check: (input: unknown, path: string) => Result<value> }
export type Infer<schema> = schema extends Schema<infer value> ? value : never

const ok = <value>(value: value): Result<value> => ({ ok: true, value })
const fail = (path: string, message: string): Result<never> => ({ ok: false, issue: { path: path || '(root)', message } })

export const string = (pattern?: RegExp): Schema<string> => ({
  check: (input, path) =>
    typeof input !== 'string' ? fail(path, 'must be a string') : pattern && !pattern.test(input) ? fail(path, `must match ${pattern}`) : ok(input),
})

export const number = (): Schema<number> => ({
  check: (input, path) => (typeof input === 'number' && Number.isFinite(input) ? ok(input) : fail(path, 'must be a finite number')),
})

export const boolean = (): Schema<boolean> => ({
  check: (input, path) => (typeof input === 'boolean' ? ok(input) : fail(path, 'must be a boolean')),
})

export const literal = <value extends string | number | boolean>(expected: value): Schema<value> => ({
  check: (input, path) => (input === expected ? ok(expected) : fail(path, `must be ${JSON.stringify(expected)}`)),
})

/** Anything: for fields passed through untouched (a request's params, an event's data). */
export const unknown = (): Schema<unknown> => ({ check: (input) => ok(input) })

export const array = <item>(schema: Schema<item>, options: { max?: number } = {}): Schema<item[]> => ({
  check(input, path) {
    if (!Array.isArray(input)) return fail(path, 'must be an array')
    if (options.max !== undefined && input.length > options.max) return fail(path, `must have at most ${options.max} items`)
    const out: item[] = []
    for (const [index, element] of input.entries()) {
      const result = schema.check(element, `${path}[${index}]`)
      if (!result.ok) return result
      out.push(result.value)
    }
    return ok(out)
  },
})

export const record = <item>(schema: Schema<item>): Schema<Record<string, item>> => ({
  check(input, path) {
    if (!isPlainObject(input)) return fail(path, 'must be an object')
    // A fresh object without a prototype: keys such as __proto__ from a peer stay plain keys.
    const out: Record<string, item> = Object.create(null)
    for (const [key, element] of Object.entries(input)) {
      const result = schema.check(element, `${path}.${key}`)
      if (!result.ok) return result
      out[key] = result.value
    }
    return ok({ ...out })
  },
})

type Shape = Record<string, Schema<unknown>>
type Optional<value> = Schema<value | undefined> & { readonly optional: true }
type OutputOf<shape extends Shape> = {
  [key in keyof shape as shape[key] extends { optional: true } ? never : key]: Infer<shape[key]>
} & {
  [key in keyof shape as shape[key] extends { optional: true } ? key : never]?: Infer<shape[key]>
}

export const optional = <value>(schema: Schema<value>): Optional<value> => ({
  optional: true,
  check: (input, path) => (input === undefined || input === null ? ok(undefined) : schema.check(input, path)),
})

/** Known keys are checked; unknown keys are dropped, so nothing unchecked reaches a handler. */
export const object = <shape extends Shape>(shape: shape): Schema<OutputOf<shape>> => ({
  check(input, path) {
    if (!isPlainObject(input)) return fail(path, 'must be an object')
    const out: Record<string, unknown> = {}
    for (const [key, schema] of Object.entries(shape)) {
      const result = schema.check(input[key], path ? `${path}.${key}` : key)
      if (!result.ok) return result
      if (result.value !== undefined) out[key] = result.value
    }
    return ok(out as OutputOf<shape>)
  },
})

export const union = <value>(...schemas: Schema<value>[]): Schema<value> => ({
  check(input, path) {
    let first: Result<value> | undefined
    for (const schema of schemas) {
      const result = schema.check(input, path)
      if (result.ok) return result
      first ??= result
    }
    return first ?? fail(path, 'matches no alternative')
  },
})

/** Checks `input`; `what` names the message in the issue text. */
export function parse<value>(schema: Schema<value>, input: unknown): Result<value> {
  return schema.check(input, '')
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
}
