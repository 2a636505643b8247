// Turnkey's policy language, the part delegated access uses: literals (bool, int, 'string', lists),
// && and ||, comparisons (== != < > <= >= in), field access, indexing and slicing, and the list
// functions all, any, contains, count and filter. Written from Turnkey's public grammar table
// (docs.turnkey.com/concepts/policies/language); nothing else is accepted.

/** A parsed expression. */
export type Expression =
  | { kind: 'literal'; value: Value }
  | { kind: 'list'; items: Expression[] }
  | { kind: 'name'; name: string }
  | { kind: 'field'; target: Expression; field: string }
  | { kind: 'index'; target: Expression; index: Expression }
  | { kind: 'slice'; target: Expression; start: Expression; end: Expression }
  | { kind: 'call'; target: Expression; method: Method; variable?: string; argument?: Expression }
  | { kind: 'binary'; operator: Operator; left: Expression; right: Expression }

/** What an expression evaluates to: ints are bigints (the engine's int is 128 bits, uint 256). */
export type Value = boolean | bigint | string | readonly Value[] | { readonly [field: string]: Value }

export type Operator = '&&' | '||' | '==' | '!=' | '<' | '>' | '<=' | '>=' | 'in'
export type Method = 'all' | 'any' | 'filter' | 'contains' | 'count'

/** An expression that does not parse: Turnkey answers code 3 (invalid argument) for it. */
export class PolicySyntaxError extends Error {}

type Token = { type: 'int' | 'string' | 'name' | 'symbol'; text: string; at: number }

const SYMBOLS = ['&&', '||', '==', '!=', '<=', '>=', '..', '<', '>', '(', ')', '[', ']', ',', '.']
const METHODS = new Set<string>(['all', 'any', 'filter', 'contains', 'count'])

function tokenize(source: string): Token[] {
  const tokens: Token[] = []
  let at = 0
  while (at < source.length) {
    const char = source[at]!
    if (/\s/.test(char)) {
      at++
      continue
    }
    if (char === "'") {
      // Only single quotes, and no escapes: a quote always ends the string.
      const end = source.indexOf("'", at + 1)
      if (end < 0) throw new PolicySyntaxError(`unterminated string starting at ${at}`)
      tokens.push({ type: 'string', text: source.slice(at + 1, end), at })
      at = end + 1
      continue
    }
    const number = /^\d+/.exec(source.slice(at))
    if (number) {
      tokens.push({ type: 'int', text: number[0], at })
      at += number[0].length
      continue
    }
    const name = /^[A-Za-z_][A-Za-z0-9_]*/.exec(source.slice(at))
    if (name) {
      tokens.push({ type: 'name', text: name[0], at })
      at += name[0].length
      continue
    }
    const symbol = SYMBOLS.find((candidate) => source.startsWith(candidate, at))
    if (!symbol) throw new PolicySyntaxError(`unexpected character ${JSON.stringify(char)} at ${at}`)
    tokens.push({ type: 'symbol', text: symbol, at })
    at += symbol.length
  }
  return tokens
}

/**
 * Parses a condition or consensus expression.
 *
 * @example
 * parsePolicyExpression("approvers.any(user, user.id == 'abc') && 1 in [1, 2]")
 */
export function parsePolicyExpression(source: string): Expression {
  const tokens = tokenize(source)
  let position = 0
  const peek = () => tokens[position]
  const describe = (token: Token | undefined) => (token ? `${JSON.stringify(token.text)} at ${token.at}` : 'the end of the expression')
  const isSymbol = (text: string) => peek()?.type === 'symbol' && peek()!.text === text
  const expect = (text: string) => {
    if (!isSymbol(text)) throw new PolicySyntaxError(`expected ${JSON.stringify(text)}, found ${describe(peek())}`)
    position++
  }

  function or(): Expression {
    let left = and()
    while (isSymbol('||')) {
      position++
      left = { kind: 'binary', operator: '||', left, right: and() }
    }
    return left
  }
  function and(): Expression {
    let left = comparison()
    while (isSymbol('&&')) {
      position++
      left = { kind: 'binary', operator: '&&', left, right: comparison() }
    }
    return left
  }
  function comparison(): Expression {
    const left = postfix()
    const token = peek()
    const operator =
      token?.type === 'symbol' && ['==', '!=', '<', '>', '<=', '>='].includes(token.text)
        ? token.text
        : token?.type === 'name' && token.text === 'in'
          ? 'in'
          : undefined
    if (!operator) return left
    position++
    return { kind: 'binary', operator: operator as Operator, left, right: postfix() }
  }
  function postfix(): Expression {
    let target = primary()
    for (;;) {
      if (isSymbol('.')) {
        position++
        const name = peek()
        if (name?.type !== 'name') throw new PolicySyntaxError(`expected a field or function name, found ${describe(name)}`)
        position++
        if (!isSymbol('(')) {
          target = { kind: 'field', target, field: name.text }
          continue
        }
        if (!METHODS.has(name.text)) throw new PolicySyntaxError(`unknown function ${name.text}`)
        position++
        const method = name.text as Method
        if (method === 'count') target = { kind: 'call', target, method }
        else if (method === 'contains') target = { kind: 'call', target, method, argument: or() }
        else {
          const variable = peek()
          if (variable?.type !== 'name') throw new PolicySyntaxError(`${method} needs an item name first, found ${describe(variable)}`)
          position++
          expect(',')
          target = { kind: 'call', target, method, variable: variable.text, argument: or() }
        }
        expect(')')
      } else if (isSymbol('[')) {
        position++
        const index = or()
        if (isSymbol('..')) {
          position++
          const end = or()
          expect(']')
          target = { kind: 'slice', target, start: index, end }
        } else {
          expect(']')
          target = { kind: 'index', target, index }
        }
      } else return target
    }
  }
  function primary(): Expression {
    const token = peek()
    if (!token) throw new PolicySyntaxError('unexpected end of the expression')
    position++
    if (token.type === 'int') return { kind: 'literal', value: BigInt(token.text) }
    if (token.type === 'string') return { kind: 'literal', value: token.text }
    if (token.type === 'name') {
      if (token.text === 'true' || token.text === 'false') return { kind: 'literal', value: token.text === 'true' }
      if (token.text === 'in') throw new PolicySyntaxError(`unexpected "in" at ${token.at}`)
      return { kind: 'name', name: token.text }
    }
    if (token.text === '(') {
      const inner = or()
      expect(')')
      return inner
    }
    if (token.text === '[') {
      const items: Expression[] = []
      if (!isSymbol(']')) {
        items.push(or())
        while (isSymbol(',')) {
          position++
          items.push(or())
        }
      }
      expect(']')
      return { kind: 'list', items }
    }
    throw new PolicySyntaxError(`unexpected ${describe(token)}`)
  }

  if (!tokens.length) throw new PolicySyntaxError('the expression is empty')
  const expression = or()
  if (position < tokens.length) throw new PolicySyntaxError(`unexpected ${describe(peek())}`)
  return expression
}
