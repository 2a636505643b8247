import { checkNames, evaluate, PolicyEvaluationError, type Scope, type Shape } from './evaluate.js'
import { type Expression, PolicySyntaxError, parsePolicyExpression } from './language.js'

// Turnkey's policy evaluation (docs.turnkey.com/concepts/policies/overview): every policy of the
// organization is evaluated; one that applies and denies wins; otherwise one that applies and
// allows allows; otherwise the request is denied ("implicit deny"). A policy applies when its
// condition and its consensus both hold (an empty one holds).

const USER: Shape = { fields: { id: 'value', tags: { items: 'value' }, email: 'value', alias: 'value' } }
const CREDENTIAL: Shape = { fields: { id: 'value', user_id: 'value', type: 'value', credential_id: 'value', public_key: 'value' } }
const WALLET: Shape = { fields: { id: 'value', imported: 'value', exported: 'value', label: 'value' } }
const ETHEREUM_TRANSACTION: Shape = {
  fields: Object.fromEntries(
    [
      'from',
      'to',
      'data',
      'value',
      'gas',
      'gas_price',
      'chain_id',
      'nonce',
      'max_fee_per_gas',
      'max_priority_fee_per_gas',
      'max_fee_per_blob_gas',
      'type',
      'function_name',
      'function_signature',
    ]
      .map((field) => [field, 'value' as Shape])
      .concat([['contract_call_args', 'open']])
      // Ours, not Turnkey's: a type-4 transaction's delegations, each as eth.eip_7702_authorization reads one.
      .concat([['authorization_list', { items: { fields: { address: 'value', chain_id: 'value', nonce: 'value' } } }]]),
  ),
}

const EIP_712: Shape = {
  fields: {
    primary_type: 'value',
    domain: { fields: { name: 'value', version: 'value', chain_id: 'value', verifying_contract: 'value' } },
    // The message as its JSON says, read by key: message['to'], message['contents']['amount'].
    message: 'open',
  },
}
const EIP_7702_AUTHORIZATION: Shape = { fields: { address: 'value', chain_id: 'value', nonce: 'value' } }

/** The keywords of each field and what they hold (Turnkey's policy language, "Keywords" and "Struct"). */
export const KEYWORDS = {
  consensus: { approvers: { items: USER }, credentials: { items: CREDENTIAL } },
  condition: {
    activity: { fields: { type: 'value', kind: 'value', resource: 'value', action: 'value', params: 'open' } },
    // Other chains' transactions are accepted in policies but never present here: such a clause errors, and its policy does not apply.
    eth: { fields: { tx: ETHEREUM_TRANSACTION, eip_712: EIP_712, eip_7702_authorization: EIP_7702_AUTHORIZATION } },
    solana: 'open',
    tron: 'open',
    bitcoin: 'open',
    tempo: 'open',
    wallet: WALLET,
    wallets: { items: WALLET },
    private_key: { fields: { id: 'value', tags: { items: 'value' }, imported: 'value', exported: 'value', label: 'value' } },
    wallet_account: { fields: { address: 'value' } },
  },
} as const satisfies Record<'consensus' | 'condition', Record<string, Shape>>

/**
 * Checks a condition or consensus when a policy is written: it must parse, and use only the
 * keywords and fields its field has. Returns the reason it cannot be used, or undefined.
 *
 * @example
 * policyExpressionProblem('consensus', "approvers.any(user, user.id == 'abc')") // undefined
 */
export function policyExpressionProblem(field: 'condition' | 'consensus', source: string): string | undefined {
  if (!source.trim()) return undefined
  try {
    checkNames(parsePolicyExpression(source), KEYWORDS[field])
    return undefined
  } catch (error) {
    if (error instanceof PolicySyntaxError) return `invalid policy ${field}: Expression cannot be evaluated: ${error.message}`
    throw error
  }
}

export type PolicyOutcome = 'OUTCOME_ALLOW' | 'OUTCOME_DENY_EXPLICIT' | 'OUTCOME_DENY_IMPLICIT' | 'OUTCOME_ERROR'

/** One policy as the engine reads it; `time`, a window this engine does not evaluate, is refused when a policy is written. */
export type Policy = { id: string; effect: string; condition: string; consensus: string; time?: string | null }

/** What the engine decided, with each policy's own outcome (as Turnkey lists them in a denial). */
export type PolicyDecision = {
  outcome: 'allow' | 'explicit deny' | 'implicit deny'
  evaluations: { policyId: string; outcome: PolicyOutcome }[]
  /** The policies that denied, when one did. */
  deniedBy: string[]
}

/**
 * Each policy text parsed once per process: a parse is a pure function of the text (the tree is
 * only read), so a policy written, changed or deleted on any instance is read by its new text on
 * the next request; nothing here can go stale. A text that does not parse keeps its error.
 */
const parsedTexts = new Map<string, Expression | PolicySyntaxError>()
const MAX_PARSED_TEXTS = 10_000

function parsed(source: string): Expression {
  let tree = parsedTexts.get(source)
  if (tree === undefined) {
    try {
      tree = parsePolicyExpression(source)
    } catch (error) {
      if (!(error instanceof PolicySyntaxError)) throw error
      tree = error
    }
    if (parsedTexts.size >= MAX_PARSED_TEXTS) parsedTexts.clear()
    parsedTexts.set(source, tree)
  }
  if (tree instanceof PolicySyntaxError) throw tree
  return tree
}

/** Whether an expression holds in `scope`: an empty one does; an error is reported as such. */
function holds(source: string, scope: Scope): boolean | 'error' {
  if (!source.trim()) return true
  try {
    const value = evaluate(parsed(source), scope)
    return typeof value === 'boolean' ? value : 'error'
  } catch (error) {
    if (error instanceof PolicyEvaluationError || error instanceof PolicySyntaxError) return 'error'
    throw error
  }
}

/**
 * What an expression settles to, reading `&&` and `||` as three-valued logic: a side that is
 * false settles `&&`, a side that is true settles `||`, whatever the other side does; anything
 * else that errors is unsettled (undefined).
 */
function settled(expression: Expression, scope: Scope): boolean | undefined {
  if (expression.kind === 'binary' && (expression.operator === '&&' || expression.operator === '||')) {
    const left = settled(expression.left, scope)
    const right = settled(expression.right, scope)
    if (expression.operator === '&&') return left === false || right === false ? false : left && right ? true : undefined
    return left === true || right === true ? true : left === false && right === false ? false : undefined
  }
  try {
    const value = evaluate(expression, scope)
    return typeof value === 'boolean' ? value : undefined
  } catch (error) {
    if (error instanceof PolicyEvaluationError) return undefined
    throw error
  }
}

/**
 * Whether a DENY policy applies, failing closed: it does unless its condition or consensus is
 * settled false (`activity.type == 'ACTIVITY_TYPE_SIGN_TRANSACTION_V2' && eth.tx.chain_id == 1`
 * leaves every other activity alone, but denies a transaction whose chain id is missing).
 */
function denyApplies(policy: Policy, scopes: { consensus: Scope; condition: Scope }): boolean | 'error' {
  const each = [
    [policy.condition, scopes.condition],
    [policy.consensus, scopes.consensus],
  ] as const
  const verdicts = each.map(([source, scope]) => {
    if (!source.trim()) return true
    try {
      return settled(parsed(source), scope)
    } catch (error) {
      if (error instanceof PolicySyntaxError) return undefined
      throw error
    }
  })
  if (verdicts.includes(false)) return false
  return verdicts.every((verdict) => verdict === true) ? true : 'error'
}

/**
 * Evaluates every policy against a request. `consensus` holds the approvers (and their
 * credentials), `condition` the activity and what it targets. An ALLOW policy whose condition or
 * consensus errors does not allow (its outcome is OUTCOME_ERROR); a DENY policy that cannot be
 * settled false denies (OUTCOME_ERROR, listed among the policies that denied): a deny fails
 * closed, where Turnkey's engine lets it pass.
 *
 * @example
 * decide(policies, { consensus: { approvers: [{ id, tags: [], email: '', alias: '' }] }, condition: { activity } })
 */
export function decide(policies: readonly Policy[], scopes: { consensus: Scope; condition: Scope }): PolicyDecision {
  const failedClosed: string[] = []
  const evaluations = policies.map((policy) => {
    if (policy.effect === 'EFFECT_DENY' && !policy.time?.trim()) {
      const applies = denyApplies(policy, scopes)
      if (applies === 'error') failedClosed.push(policy.id)
      const outcome: PolicyOutcome = applies === 'error' ? 'OUTCOME_ERROR' : applies ? 'OUTCOME_DENY_EXPLICIT' : 'OUTCOME_DENY_IMPLICIT'
      return { policyId: policy.id, outcome }
    }
    // Both are evaluated, as the engine does not short-circuit.
    const condition = holds(policy.condition, scopes.condition)
    const consensus = holds(policy.consensus, scopes.consensus)
    let outcome: PolicyOutcome
    // A time window stored before they were refused cannot be evaluated: such a policy neither allows nor denies.
    if (condition === 'error' || consensus === 'error' || policy.time?.trim()) outcome = 'OUTCOME_ERROR'
    else if (condition && consensus) outcome = policy.effect === 'EFFECT_DENY' ? 'OUTCOME_DENY_EXPLICIT' : 'OUTCOME_ALLOW'
    else outcome = 'OUTCOME_DENY_IMPLICIT'
    return { policyId: policy.id, outcome }
  })
  const deniedBy = evaluations
    .filter((evaluation) => evaluation.outcome === 'OUTCOME_DENY_EXPLICIT' || failedClosed.includes(evaluation.policyId))
    .map((evaluation) => evaluation.policyId)
  const outcome = deniedBy.length ? 'explicit deny' : evaluations.some((evaluation) => evaluation.outcome === 'OUTCOME_ALLOW') ? 'allow' : 'implicit deny'
  return { outcome, evaluations, deniedBy }
}

/**
 * Evaluates every policy against a request that targets several things at once (each payload of a
 * sign_raw_payloads): each `conditions` scope is decided on its own, and the request is allowed
 * only when every one is; an explicit deny of any wins, then an implicit one (that decision is
 * the one reported).
 *
 * @example
 * decideEach(policies, { consensus, conditions: payloads.map((payload) => scopeOf(payload)) })
 */
export function decideEach(policies: readonly Policy[], scopes: { consensus: Scope; conditions: readonly Scope[] }): PolicyDecision {
  const decisions = scopes.conditions.map((condition) => decide(policies, { consensus: scopes.consensus, condition }))
  const first = decisions[0]
  if (!first) throw new Error('decideEach needs at least one condition scope')
  return decisions.find((decision) => decision.outcome === 'explicit deny') ?? decisions.find((decision) => decision.outcome === 'implicit deny') ?? first
}

/** What Turnkey answers a request its policies refuse (HTTP 403, code 7), word for word. */
export const POLICY_DENIED_MESSAGE =
  "You don't have sufficient permissions to take this action. Please add a policy granting this user permissions. Learn more at https://docs.turnkey.com/concepts/policies/quickstart."

/**
 * The `details` entry of a policy denial: `errors.v1.PolicyEnginePermissionError`, with each
 * policy's outcome, as Turnkey sends it.
 *
 * @example
 * new KmsError(GrpcCode.permissionDenied, POLICY_DENIED_MESSAGE, [policyDenialDetail(decision)])
 */
export function policyDenialDetail(decision: Pick<PolicyDecision, 'evaluations' | 'deniedBy'>) {
  return {
    '@type': 'type.googleapis.com/errors.v1.PolicyEnginePermissionError',
    message: decision.deniedBy.length
      ? `The following policies denied this action: ${decision.deniedBy.join(', ')}`
      : 'No policies evaluated to outcome: Allow',
    policyEvaluations: decision.evaluations,
  }
}
