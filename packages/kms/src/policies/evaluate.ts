import { type Expression, PolicySyntaxError, type Value } from './language.js'

/**
 * An expression that parsed but cannot be evaluated here (a missing field, a type mismatch): the
 * policy's outcome is an error. The engine throws one for every clause that does not apply to an
 * activity and catches it at once, on every request: it carries no stack (none is ever read), whose
 * capture was most of its cost.
 */
export class PolicyEvaluationError extends Error {
  constructor(message: string) {
    const limit = Error.stackTraceLimit
    Error.stackTraceLimit = 0
    try {
      super(message)
    } finally {
      Error.stackTraceLimit = limit
    }
  }
}

/** The keywords an expression may name, and what they stand for in this evaluation. */
export type Scope = { readonly [keyword: string]: Value | undefined }

const HEX_ADDRESS = /^0x[0-9a-fA-F]{40}$/

function typeOf(value: Value): string {
  if (typeof value === 'boolean') return 'bool'
  if (typeof value === 'bigint') return 'int'
  if (typeof value === 'string') return 'string'
  return Array.isArray(value) ? 'list' : 'struct'
}

function isStruct(value: Value): value is { readonly [field: string]: Value } {
  return typeof value === 'object' && !Array.isArray(value)
}

const DECIMAL = /^(0|-?[1-9][0-9]*)$/

/**
 * An int and a string of decimal digits compare as numbers: Turnkey's own examples compare
 * payload numbers with quoted digits (`eth.eip_7702_authorization.chain_id == '<CHAIN_ID>'`,
 * `eth.eip_712.message['ethAmount'] == '0'`, where typed data carries a uint256 as a string) as well
 * as with ints (`eth.eip_712.message['value'] <= 100000000`). Anything else keeps its type.
 */
function numeric(left: Value, right: Value): [bigint, bigint] | undefined {
  if (typeof left === 'bigint' && typeof right === 'string' && DECIMAL.test(right)) return [left, BigInt(right)]
  if (typeof left === 'string' && typeof right === 'bigint' && DECIMAL.test(left)) return [BigInt(left), right]
  return undefined
}

/** Equality of two values of one type; Ethereum addresses compare whatever the case of their hex digits (checksummed or not). */
function equal(left: Value, right: Value): boolean {
  const numbers = numeric(left, right)
  if (numbers) return numbers[0] === numbers[1]
  const type = typeOf(left)
  if (type !== typeOf(right)) throw new PolicyEvaluationError(`cannot compare ${type} with ${typeOf(right)}`)
  if (typeof left === 'string' && typeof right === 'string' && HEX_ADDRESS.test(left) && HEX_ADDRESS.test(right))
    return left.toLowerCase() === right.toLowerCase()
  if (Array.isArray(left)) {
    const other = right as readonly Value[]
    return left.length === other.length && left.every((item, index) => equal(item, other[index]!))
  }
  if (isStruct(left)) {
    const other = right as { readonly [field: string]: Value }
    const keys = Object.keys(left)
    return keys.length === Object.keys(other).length && keys.every((key) => Object.hasOwn(other, key) && equal(left[key]!, other[key]!))
  }
  return left === right
}

function asBool(value: Value, what: string): boolean {
  if (typeof value !== 'boolean') throw new PolicyEvaluationError(`${what} must be a bool, not ${typeOf(value)}`)
  return value
}

function asInt(value: Value, what: string): bigint {
  if (typeof value !== 'bigint') throw new PolicyEvaluationError(`${what} must be an int, not ${typeOf(value)}`)
  return value
}

function asList(value: Value, what: string): readonly Value[] {
  if (!Array.isArray(value)) throw new PolicyEvaluationError(`${what} must be a list, not ${typeOf(value)}`)
  return value
}

/** A position into `length` items; outside them is an error, not a clamp. */
function position(value: Value, length: number, inclusiveEnd: boolean): number {
  const at = asInt(value, 'an index')
  if (at < 0n || at > BigInt(inclusiveEnd ? length : length - 1)) throw new PolicyEvaluationError(`index ${at} is out of range (length ${length})`)
  return Number(at)
}

/**
 * Evaluates a parsed expression to a value. Like Turnkey's engine it does not short-circuit:
 * both sides of && and || and the predicate for every item are evaluated, so an error anywhere
 * in the expression is the expression's outcome.
 *
 * @example
 * evaluate(parsePolicyExpression("eth.tx.value <= 100"), { eth: { tx: { value: 5n } } }) // true
 */
export function evaluate(expression: Expression, scope: Scope, variables: ReadonlyMap<string, Value> = new Map()): Value {
  switch (expression.kind) {
    case 'literal':
      return expression.value
    case 'list':
      return expression.items.map((item) => evaluate(item, scope, variables))
    case 'name': {
      const bound = variables.get(expression.name)
      if (bound !== undefined) return bound
      const value = Object.hasOwn(scope, expression.name) ? scope[expression.name] : undefined
      if (value === undefined) throw new PolicyEvaluationError(`field does not exist: ${expression.name}`)
      return value
    }
    case 'field': {
      const target = evaluate(expression.target, scope, variables)
      if (!isStruct(target)) throw new PolicyEvaluationError(`cannot read ${expression.field} of a ${typeOf(target)}`)
      if (!Object.hasOwn(target, expression.field)) throw new PolicyEvaluationError(`field does not exist: ${expression.field}`)
      return target[expression.field]!
    }
    case 'index': {
      const target = evaluate(expression.target, scope, variables)
      const index = evaluate(expression.index, scope, variables)
      if (typeof target === 'string') return target[position(index, target.length, false)]!
      // A map's entry by its key, as `eth.eip_712.message['to']` and `eth.tx.contract_call_args['dst']` read.
      if (isStruct(target)) {
        if (typeof index !== 'string') throw new PolicyEvaluationError(`a struct is indexed by a string, not ${typeOf(index)}`)
        if (!Object.hasOwn(target, index)) throw new PolicyEvaluationError(`field does not exist: ${index}`)
        return target[index]!
      }
      const list = asList(target, 'what is indexed')
      return list[position(index, list.length, false)]!
    }
    case 'slice': {
      const target = evaluate(expression.target, scope, variables)
      const start = evaluate(expression.start, scope, variables)
      const end = evaluate(expression.end, scope, variables)
      const sliceable = typeof target === 'string' ? target : asList(target, 'what is sliced')
      const from = position(start, sliceable.length, true)
      const to = position(end, sliceable.length, true)
      if (from > to) throw new PolicyEvaluationError(`slice ${from}..${to} runs backwards`)
      return sliceable.slice(from, to)
    }
    case 'call': {
      const list = asList(evaluate(expression.target, scope, variables), `the target of ${expression.method}()`)
      if (expression.method === 'count') return BigInt(list.length)
      if (expression.method === 'contains') {
        const wanted = evaluate(expression.argument!, scope, variables)
        return list.map((item) => equal(item, wanted)).includes(true)
      }
      const verdicts = list.map((item) =>
        asBool(evaluate(expression.argument!, scope, new Map([...variables, [expression.variable!, item]])), `the predicate of ${expression.method}()`),
      )
      if (expression.method === 'all') return verdicts.every(Boolean)
      if (expression.method === 'any') return verdicts.some(Boolean)
      return list.filter((_, index) => verdicts[index])
    }
    case 'binary': {
      const left = evaluate(expression.left, scope, variables)
      const right = evaluate(expression.right, scope, variables)
      switch (expression.operator) {
        case '&&':
          return asBool(left, 'the left of &&') && asBool(right, 'the right of &&')
        case '||':
          return asBool(left, 'the left of ||') || asBool(right, 'the right of ||')
        case '==':
          return equal(left, right)
        case '!=':
          return !equal(left, right)
        case 'in':
          return asList(right, 'the right of in')
            .map((item) => equal(left, item))
            .includes(true)
        default: {
          const numbers = numeric(left, right)
          const a = numbers ? numbers[0] : asInt(left, `the left of ${expression.operator}`)
          const b = numbers ? numbers[1] : asInt(right, `the right of ${expression.operator}`)
          if (expression.operator === '<') return a < b
          if (expression.operator === '>') return a > b
          if (expression.operator === '<=') return a <= b
          return a >= b
        }
      }
    }
  }
}

/** The shape of what a keyword stands for, to refuse fields that can never exist when a policy is written. */
export type Shape = 'value' | 'open' | { readonly fields: { readonly [field: string]: Shape } } | { readonly items: Shape }

/**
 * Checks that every name an expression uses is a keyword of its field (or an item a function
 * named) and that every field it reads off a keyword exists, as Turnkey checks a policy when it is
 * created ("field does not exist: …").
 *
 * @example
 * checkNames(parsePolicyExpression('wallet.name == 1'), { wallet: { fields: { id: 'value' } } }) // throws
 */
export function checkNames(expression: Expression, keywords: { readonly [keyword: string]: Shape }, bound: ReadonlyMap<string, Shape> = new Map()): Shape {
  switch (expression.kind) {
    case 'literal':
      return 'value'
    case 'list':
      for (const item of expression.items) checkNames(item, keywords, bound)
      return 'value'
    case 'name': {
      const shape = bound.get(expression.name) ?? (Object.hasOwn(keywords, expression.name) ? keywords[expression.name] : undefined)
      if (shape === undefined) throw new PolicySyntaxError(`field does not exist: ${expression.name}`)
      return shape
    }
    case 'field': {
      const target = checkNames(expression.target, keywords, bound)
      if (typeof target === 'object' && 'fields' in target) {
        if (!Object.hasOwn(target.fields, expression.field)) throw new PolicySyntaxError(`field does not exist: ${expression.field}`)
        return target.fields[expression.field]!
      }
      return 'open'
    }
    case 'index': {
      checkNames(expression.index, keywords, bound)
      const target = checkNames(expression.target, keywords, bound)
      if (typeof target === 'object' && 'items' in target) return target.items
      // A struct read by a key written out: the key must be one of its fields.
      if (typeof target === 'object' && 'fields' in target && expression.index.kind === 'literal' && typeof expression.index.value === 'string') {
        if (!Object.hasOwn(target.fields, expression.index.value)) throw new PolicySyntaxError(`field does not exist: ${expression.index.value}`)
        return target.fields[expression.index.value]!
      }
      return 'open'
    }
    case 'slice':
      checkNames(expression.start, keywords, bound)
      checkNames(expression.end, keywords, bound)
      return checkNames(expression.target, keywords, bound)
    case 'call': {
      const target = checkNames(expression.target, keywords, bound)
      const item = typeof target === 'object' && 'items' in target ? target.items : 'open'
      if (expression.argument) checkNames(expression.argument, keywords, expression.variable ? new Map([...bound, [expression.variable, item]]) : bound)
      return expression.method === 'filter' ? target : 'value'
    }
    case 'binary':
      checkNames(expression.left, keywords, bound)
      checkNames(expression.right, keywords, bound)
      return 'value'
  }
}
