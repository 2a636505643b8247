import { describe, expect, test } from 'vitest'
import { decide, POLICY_DENIED_MESSAGE, policyDenialDetail, policyExpressionProblem } from '../src/policies/engine.js'
import { evaluate, PolicyEvaluationError, type Scope } from '../src/policies/evaluate.js'
import { activityKind } from '../src/policies/kinds.js'
import { PolicySyntaxError, parsePolicyExpression } from '../src/policies/language.js'

// Turnkey's policy language as the kms parses and evaluates it, rule by rule, and the engine's
// decision over several policies (deny wins, allow, implicit deny, errors).

const DA = '4b894565-fa11-42fc-b813-5bf4ea3d53f9'
const RECIPIENT = '0x08d2b0a37f869ff76bacb5bab3278e26ab7067b7'
const scope: Scope = {
  approvers: [{ id: DA, tags: ['tag-a'], email: 'da@example.test', alias: 'Delegated' }],
  activity: { type: 'ACTIVITY_TYPE_SIGN_TRANSACTION_V2', resource: 'PRIVATE_KEY', action: 'SIGN', params: { type: 'TRANSACTION_TYPE_ETHEREUM' } },
  eth: { tx: { to: RECIPIENT, value: 1000n, chain_id: 31337n, data: '0xa9059cbb0000', from: '0x1111111111111111111111111111111111111111' } },
  wallet: { id: 'wallet-1', imported: false, exported: false, label: 'Main' },
}
const run = (source: string, within: Scope = scope) => evaluate(parsePolicyExpression(source), within)

describe('the language', () => {
  test('literals: bool, int, single-quoted string, list', () => {
    expect(run('true')).toBe(true)
    expect(run('false')).toBe(false)
    expect(run('42')).toBe(42n)
    expect(run("'a b'")).toBe('a b')
    expect(run("[1, 'x', true]")).toEqual([1n, 'x', true])
  })

  test('&& and || on bools', () => {
    expect(run('true && false')).toBe(false)
    expect(run('true && true')).toBe(true)
    expect(run('false || true')).toBe(true)
    expect(run('false || false')).toBe(false)
    // && binds tighter than ||.
    expect(run('true || true && false')).toBe(true)
    expect(run('(true || true) && false')).toBe(false)
  })

  test('comparisons: == and != on strings, ints, bools; < > <= >= on ints', () => {
    expect(run("'a' == 'a'")).toBe(true)
    expect(run("'a' != 'b'")).toBe(true)
    expect(run('2 == 2')).toBe(true)
    expect(run('true != false')).toBe(true)
    expect(run('1 < 2')).toBe(true)
    expect(run('2 < 2')).toBe(false)
    expect(run('3 > 2')).toBe(true)
    expect(run('2 <= 2')).toBe(true)
    expect(run('1 >= 2')).toBe(false)
  })

  test('in: membership of a list', () => {
    expect(run('1 in [1, 2, 3]')).toBe(true)
    expect(run("'z' in ['a', 'b']")).toBe(false)
  })

  test('access: field, index and slice of lists and strings', () => {
    expect(run('wallet.label')).toBe('Main')
    expect(run('[1,2,3][0]')).toBe(1n)
    expect(run("'abc'[1]")).toBe('b')
    expect(run('[1,2,3][0..2]')).toEqual([1n, 2n])
    expect(run("'abc'[0..2]")).toBe('ab')
    expect(run('eth.tx.data[0..10]')).toBe('0xa9059cbb')
  })

  test('functions: all, any, contains, count, filter', () => {
    expect(run('[1,1,1].all(x, x == 1)')).toBe(true)
    expect(run('[1,2,1].all(x, x == 1)')).toBe(false)
    expect(run('[1,2,3].any(x, x == 3)')).toBe(true)
    expect(run('[1,2,3].any(x, x == 4)')).toBe(false)
    expect(run('[1,2,3].contains(2)')).toBe(true)
    expect(run('[1,2,3].contains(5)')).toBe(false)
    expect(run('[1,2,3].count()')).toBe(3n)
    expect(run('[1,2,3,1].filter(x, x == 1)')).toEqual([1n, 1n])
    expect(run('[1,2,3].filter(x, x > 1).count() == 2')).toBe(true)
  })

  test('consensus: approvers.any over the users that approved', () => {
    expect(run(`approvers.any(user, user.id == '${DA}')`)).toBe(true)
    expect(run("approvers.any(user, user.id == 'someone-else')")).toBe(false)
    expect(run("approvers.any(user, user.tags.contains('tag-a'))")).toBe(true)
    expect(run('approvers.count() >= 2')).toBe(false)
  })

  test('Ethereum fields: to, value, chain_id; addresses compare whatever their case', () => {
    expect(run(`eth.tx.to == '${RECIPIENT}'`)).toBe(true)
    expect(run("eth.tx.to == '0x08D2b0A37F869FF76BACB5Bab3278E26ab7067B7'")).toBe(true)
    expect(run("eth.tx.to == '0x0000000000000000000000000000000000000001'")).toBe(false)
    expect(run('eth.tx.value <= 1000 && eth.tx.chain_id == 31337')).toBe(true)
    expect(run('eth.tx.value < 1000')).toBe(false)
    // Other strings compare exactly.
    expect(run("wallet.label == 'main'")).toBe(false)
  })

  test('an int and a string of decimal digits compare as numbers (Turnkey’s examples quote payload numbers)', () => {
    expect(run("31337 == '31337'")).toBe(true)
    expect(run("eth.tx.chain_id == '31337'")).toBe(true)
    expect(run("eth.tx.chain_id != '1'")).toBe(true)
    expect(run("'1000' <= eth.tx.value && eth.tx.value < '1001'")).toBe(true)
    expect(run("eth.tx.chain_id in ['1', '31337']")).toBe(true)
    expect(run("'-5' < 0")).toBe(true)
    expect(() => run("eth.tx.value < 'a lot'")).toThrow(new PolicyEvaluationError('the right of < must be an int, not string'))
  })

  test("a struct read by key: message['to'], nested, and a missing key is an error", () => {
    const typed: Scope = {
      eth: { eip_712: { primary_type: 'Order', domain: { name: 'Exchange', chain_id: 10n }, message: { to: RECIPIENT, contents: { amount: '25' } } } },
    }
    expect(run(`eth.eip_712.message['to'] == '${RECIPIENT.toUpperCase().replace('0X', '0x')}'`, typed)).toBe(true)
    expect(run("eth.eip_712.message['contents']['amount'] <= 25", typed)).toBe(true)
    expect(run("eth.eip_712.domain['name'] == 'Exchange'", typed)).toBe(true)
    expect(() => run("eth.eip_712.message['from'] == ''", typed)).toThrow(new PolicyEvaluationError('field does not exist: from'))
    expect(() => run('eth.eip_712.message[0]', typed)).toThrow(new PolicyEvaluationError('a struct is indexed by a string, not int'))
  })

  test('ints are not limited to 53 bits', () => {
    expect(run('170141183460469231731687303715884105727 > 9007199254740993')).toBe(true)
  })

  test('errors: a missing keyword or field, a type mismatch, an index out of range', () => {
    expect(() => run('private_key.id == "x"')).toThrow(PolicySyntaxError)
    expect(() => run("private_key.id == 'x'")).toThrow(new PolicyEvaluationError('field does not exist: private_key'))
    expect(() => run('wallet.nope')).toThrow(new PolicyEvaluationError('field does not exist: nope'))
    expect(() => run("1 == 'one'")).toThrow(new PolicyEvaluationError('cannot compare int with string'))
    expect(() => run("1 == '01'")).toThrow(new PolicyEvaluationError('cannot compare int with string'))
    expect(() => run("true == 'true'")).toThrow(new PolicyEvaluationError('cannot compare bool with string'))
    expect(() => run("'a' < 'b'")).toThrow(PolicyEvaluationError)
    expect(() => run('[1][3]')).toThrow(PolicyEvaluationError)
    expect(() => run('1 && true')).toThrow(PolicyEvaluationError)
  })

  test('no short-circuit: an error on the side that would not decide is still the outcome', () => {
    expect(() => run("true || private_key.id == 'x'")).toThrow(PolicyEvaluationError)
    expect(() => run("false && private_key.id == 'x'")).toThrow(PolicyEvaluationError)
    expect(() => run('[1, 2].any(x, x == 1 || x.missing)')).toThrow(PolicyEvaluationError)
  })

  test('syntax: what does not parse is refused', () => {
    for (const source of ['', '1 ==', "'open", 'a.b(', '[1, 2', 'x.sort()', '1 2', 'a.any(1, true)', '!true', 'in'])
      expect(() => parsePolicyExpression(source), source).toThrow(PolicySyntaxError)
  })
})

describe('writing a policy', () => {
  test('an expression must use its field’s keywords and fields that exist', () => {
    expect(policyExpressionProblem('consensus', `approvers.any(user, user.id == '${DA}')`)).toBeUndefined()
    expect(policyExpressionProblem('condition', "activity.type == 'ACTIVITY_TYPE_CREATE_API_KEYS_V2' && eth.tx.to == '0x1'")).toBeUndefined()
    expect(policyExpressionProblem('condition', "wallet_account.path == 'x'")).toBe(
      'invalid policy condition: Expression cannot be evaluated: field does not exist: path',
    )
    // approvers belongs to consensus, activity to condition.
    expect(policyExpressionProblem('condition', 'approvers.count() == 1')).toBe(
      'invalid policy condition: Expression cannot be evaluated: field does not exist: approvers',
    )
    expect(policyExpressionProblem('consensus', "activity.type == 'x'")).toBe(
      'invalid policy consensus: Expression cannot be evaluated: field does not exist: activity',
    )
    expect(policyExpressionProblem('consensus', 'approvers.any(user, user.name == 1)')).toBe(
      'invalid policy consensus: Expression cannot be evaluated: field does not exist: name',
    )
    // Typed data and EIP-7702 authorizations (the language page's Eip712TypedData, Eip712Domain, Eip7702Authorization).
    expect(
      policyExpressionProblem(
        'condition',
        "eth.eip_712.primary_type == 'Permit' && eth.eip_712.domain.verifying_contract == '0x1' && eth.eip_712.domain.chain_id == 1 && eth.eip_712.message['spender']['x'] == 'y'",
      ),
    ).toBeUndefined()
    expect(policyExpressionProblem('condition', "eth.eip_712.domain.salt == '0x1'")).toBe(
      'invalid policy condition: Expression cannot be evaluated: field does not exist: salt',
    )
    expect(policyExpressionProblem('condition', "eth.eip_712.domain['chainId'] == 1")).toBe(
      'invalid policy condition: Expression cannot be evaluated: field does not exist: chainId',
    )
    expect(
      policyExpressionProblem(
        'condition',
        "eth.eip_7702_authorization.address == '0x1' && eth.eip_7702_authorization.chain_id == '1' && eth.eip_7702_authorization.nonce < 5",
      ),
    ).toBeUndefined()
    expect(policyExpressionProblem('condition', 'eth.eip_7702_authorization.contract == 1')).toBe(
      'invalid policy condition: Expression cannot be evaluated: field does not exist: contract',
    )
    expect(policyExpressionProblem('condition', 'eth.tx.to ==')).toMatch(/^invalid policy condition: Expression cannot be evaluated: /)
    expect(policyExpressionProblem('condition', '   ')).toBeUndefined()
    expect(policyExpressionProblem('condition', "activity.kind == 'SIGN_TRANSACTION'")).toBeUndefined()
  })

  test('activity.kind: the activity without its version, absent where Turnkey’s table of kinds has none', () => {
    expect(
      [
        'ACTIVITY_TYPE_SIGN_TRANSACTION_V2',
        'ACTIVITY_TYPE_CREATE_SUB_ORGANIZATION_V8',
        'ACTIVITY_TYPE_SIGN_RAW_PAYLOADS',
        'ACTIVITY_TYPE_CREATE_API_KEYS_V2',
      ].map(activityKind),
    ).toEqual(['SIGN_TRANSACTION', 'CREATE_SUB_ORGANIZATION', 'SIGN_RAW_PAYLOADS', 'CREATE_API_KEYS'])
    expect(['ACTIVITY_TYPE_UPDATE_ROOT_QUORUM', 'ACTIVITY_TYPE_RECOVER_USER', 'ACTIVITY_TYPE_APPROVE_ACTIVITY'].map(activityKind)).toEqual([
      undefined,
      undefined,
      undefined,
    ])
  })
})

describe('deciding over an organization’s policies', () => {
  const scopes = {
    consensus: { approvers: scope['approvers'] },
    condition: { activity: scope['activity'], eth: scope['eth'], wallet: scope['wallet'] },
  }
  const allowRecipient = { id: 'allow', effect: 'EFFECT_ALLOW', consensus: `approvers.any(user, user.id == '${DA}')`, condition: `eth.tx.to == '${RECIPIENT}'` }

  test('an applicable EFFECT_ALLOW allows', () => {
    expect(decide([allowRecipient], scopes)).toEqual({ outcome: 'allow', evaluations: [{ policyId: 'allow', outcome: 'OUTCOME_ALLOW' }], deniedBy: [] })
  })

  test('no applicable policy: implicit deny', () => {
    expect(decide([], scopes).outcome).toBe('implicit deny')
    const otherRecipient = { ...allowRecipient, condition: "eth.tx.to == '0x0000000000000000000000000000000000000001'" }
    expect(decide([otherRecipient], scopes)).toEqual({
      outcome: 'implicit deny',
      evaluations: [{ policyId: 'allow', outcome: 'OUTCOME_DENY_IMPLICIT' }],
      deniedBy: [],
    })
  })

  test('the consensus must hold too: another approver is not allowed', () => {
    const forSomeoneElse = { ...allowRecipient, consensus: "approvers.any(user, user.id == 'someone-else')" }
    expect(decide([forSomeoneElse], scopes).outcome).toBe('implicit deny')
  })

  test('an empty condition or consensus holds', () => {
    expect(decide([{ id: 'any', effect: 'EFFECT_ALLOW', consensus: '', condition: '' }], scopes).outcome).toBe('allow')
  })

  test('deny wins over allow', () => {
    const deny = { id: 'deny', effect: 'EFFECT_DENY', consensus: '', condition: 'eth.tx.value > 100' }
    expect(decide([allowRecipient, deny], scopes)).toEqual({
      outcome: 'explicit deny',
      evaluations: [
        { policyId: 'allow', outcome: 'OUTCOME_ALLOW' },
        { policyId: 'deny', outcome: 'OUTCOME_DENY_EXPLICIT' },
      ],
      deniedBy: ['deny'],
    })
    // A deny that does not apply leaves the allow standing.
    expect(decide([allowRecipient, { ...deny, condition: 'eth.tx.value > 5000' }], scopes).outcome).toBe('allow')
  })

  test('a policy with a time window (stored before they were refused) neither allows nor denies', () => {
    const windowed = { ...allowRecipient, time: "time.now >= Timestamp('2026-03-01T00:00:00Z')" }
    expect(decide([windowed], scopes).evaluations).toEqual([{ policyId: 'allow', outcome: 'OUTCOME_ERROR' }])
    expect(decide([{ ...windowed, effect: 'EFFECT_DENY' }, allowRecipient], scopes).outcome).toBe('allow')
  })

  test('an ALLOW policy whose expression errors does not allow; a DENY one denies (fails closed) unless && or || settle it', () => {
    const broken = { id: 'broken', effect: 'EFFECT_ALLOW', consensus: '', condition: "private_key.id == 'k'" }
    expect(decide([broken], scopes)).toEqual({ outcome: 'implicit deny', evaluations: [{ policyId: 'broken', outcome: 'OUTCOME_ERROR' }], deniedBy: [] })
    expect(decide([allowRecipient, { ...broken, effect: 'EFFECT_DENY' }], scopes)).toEqual({
      outcome: 'explicit deny',
      evaluations: [
        { policyId: allowRecipient.id, outcome: 'OUTCOME_ALLOW' },
        { policyId: 'broken', outcome: 'OUTCOME_ERROR' },
      ],
      deniedBy: ['broken'],
    })
    const guarded = { ...broken, effect: 'EFFECT_DENY', condition: "activity.type == 'ACTIVITY_TYPE_EXPORT_PRIVATE_KEY' && private_key.id == 'k'" }
    expect(decide([allowRecipient, guarded], scopes).outcome).toBe('allow')
    const either = { ...guarded, condition: "private_key.id == 'k' || activity.type == 'ACTIVITY_TYPE_EXPORT_PRIVATE_KEY'" }
    expect(decide([allowRecipient, either], scopes).outcome).toBe('explicit deny')
  })

  test('the denial carries Turnkey’s detail: the message and every policy’s outcome', () => {
    expect(POLICY_DENIED_MESSAGE).toBe(
      "You don't have sufficient permissions to take this action. Please add a policy granting this user permissions. Learn more at https://docs.turnkey.com/concepts/policies/quickstart.",
    )
    expect(policyDenialDetail({ evaluations: [{ policyId: 'p', outcome: 'OUTCOME_DENY_IMPLICIT' }], deniedBy: [] })).toEqual({
      '@type': 'type.googleapis.com/errors.v1.PolicyEnginePermissionError',
      message: 'No policies evaluated to outcome: Allow',
      policyEvaluations: [{ policyId: 'p', outcome: 'OUTCOME_DENY_IMPLICIT' }],
    })
    expect(policyDenialDetail({ evaluations: [], deniedBy: ['a', 'b'] }).message).toBe('The following policies denied this action: a, b')
  })
})
