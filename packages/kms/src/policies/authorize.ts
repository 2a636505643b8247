import { type Hex, parseTransaction, type TypedDataDefinition } from 'viem'
import type { Caller, SigningKeyRead } from '../context.js'
import type { Approver, Db } from '../db.js'
import { GrpcCode, KmsError } from '../errors.js'
import { authorizationOf, typedDataOf } from '../ethereum.js'
import { rootUserIds } from '../organizations/quorum.js'
import { isPrivateKeyId } from '../privateKeys/keys.js'
import type { ApiKeyRow, AuthenticatorRow, OrganizationRow } from '../storage/tables.js'
import { decideEach, POLICY_DENIED_MESSAGE, type Policy, type PolicyDecision, policyDenialDetail } from './engine.js'
import type { Scope } from './evaluate.js'
import { activityKind, allowedByDefault, kindOf, PARENT_INITIATED, paramsOf, ROOT_QUORUM_ONLY, sessionForAnotherRoot } from './kinds.js'
import type { Value } from './language.js'

/** Refuses a request as Turnkey's policy engine does: 403, code 7, a PolicyEnginePermissionError detail. */
export function policyDenied(decision: Pick<PolicyDecision, 'evaluations' | 'deniedBy'> = { evaluations: [], deniedBy: [] }): KmsError {
  return new KmsError(GrpcCode.permissionDenied, POLICY_DENIED_MESSAGE, [policyDenialDetail(decision)])
}

const TRANSACTION_TYPES: Readonly<Record<string, string>> = { legacy: 'LEGACY', eip2930: 'TYPE_1', eip1559: 'TYPE_2', eip4844: 'TYPE_3', eip7702: 'TYPE_4' }

/** `eth.tx` of an unsigned serialized Ethereum transaction, sent from `from`; undefined when it does not parse (the signing refuses it then). */
function ethereumTransaction(unsignedTransaction: string, from: string): Value | undefined {
  let parsed: ReturnType<typeof parseTransaction>
  try {
    parsed = parseTransaction((unsignedTransaction.startsWith('0x') ? unsignedTransaction : `0x${unsignedTransaction}`) as Hex)
  } catch {
    return undefined
  }
  const data = (parsed.data ?? '0x').toLowerCase()
  const fields: Record<string, Value> = {
    from: from.toLowerCase(),
    to: (parsed.to ?? '').toLowerCase(),
    data,
    value: parsed.value ?? 0n,
    nonce: BigInt(parsed.nonce ?? 0),
    type: TRANSACTION_TYPES[parsed.type ?? 'legacy'] ?? 'LEGACY',
  }
  if (parsed.gas !== undefined) fields['gas'] = parsed.gas
  if (parsed.chainId !== undefined) fields['chain_id'] = BigInt(parsed.chainId)
  // On EIP-1559 transactions gas_price carries max_fee_per_gas, as Turnkey documents.
  const gasPrice = 'gasPrice' in parsed && parsed.gasPrice !== undefined ? parsed.gasPrice : 'maxFeePerGas' in parsed ? parsed.maxFeePerGas : undefined
  if (gasPrice !== undefined) fields['gas_price'] = gasPrice
  if ('maxFeePerGas' in parsed && parsed.maxFeePerGas !== undefined) fields['max_fee_per_gas'] = parsed.maxFeePerGas
  if ('maxPriorityFeePerGas' in parsed && parsed.maxPriorityFeePerGas !== undefined) fields['max_priority_fee_per_gas'] = parsed.maxPriorityFeePerGas
  if ('maxFeePerBlobGas' in parsed && parsed.maxFeePerBlobGas !== undefined) fields['max_fee_per_blob_gas'] = parsed.maxFeePerBlobGas
  if (data.length >= 10) fields['function_signature'] = data.slice(0, 10)
  if (parsed.type === 'eip7702')
    fields['authorization_list'] = (parsed.authorizationList ?? []).map(({ address, chainId, nonce }) => ({
      address: address.toLowerCase(),
      chain_id: BigInt(chainId),
      nonce: BigInt(nonce),
    }))
  return { tx: fields }
}

/** The user as `approvers` lists them: id, tag ids, email and name (Turnkey's alias). */
async function userValue(db: Db, organizationId: string, userId: string, read?: Approver | undefined): Promise<Value> {
  const user = read ?? (await db.approver(userId, organizationId))
  return { id: userId, tags: user.tags, email: user.email ?? '', alias: user.name ?? '' }
}

const apiKeyValue = (key: ApiKeyRow): Value => ({ id: key.id, user_id: key.user_id, type: key.credential_type, credential_id: '', public_key: key.public_key })
const authenticatorValue = (authenticator: AuthenticatorRow): Value => ({
  id: authenticator.id,
  user_id: authenticator.user_id,
  type: 'CREDENTIAL_TYPE_WEBAUTHN_AUTHENTICATOR',
  credential_id: authenticator.credential_id,
  public_key: authenticator.public_key,
})

/** The credential that stamped a request or a vote (an API key's public key or a passkey's credential id), as `credentials` lists it. */
async function credentialValue(db: Db, credential: string | null | undefined, read?: ApiKeyRow | undefined): Promise<Value[]> {
  if (!credential) return []
  const apiKey = read?.public_key === credential ? read : await db.apiKeyByPublicKey(credential)
  if (apiKey) return [apiKeyValue(apiKey)]
  const authenticator = await db.authenticatorByCredential(credential)
  return authenticator ? [authenticatorValue(authenticator)] : []
}

/** One approval of an activity: who gave it, and with which credential. */
export type Approval = {
  userId: string
  credential?: string | null | undefined
  /** The credential's API key when the request already read it (its own stamp's, in the same request): not read again. */
  apiKey?: ApiKeyRow | undefined
  /** The user as `approvers` lists them, when the request already read them (with its own stamp's key): not read again. */
  approver?: Approver | undefined
}

/** `approvers` and `credentials` of a set of approvals, in the order they were given. */
export async function consensusScope(db: Db, organizationId: string, approvals: readonly Approval[]): Promise<Scope> {
  const approvers: Value[] = []
  const credentials: Value[] = []
  for (const approval of approvals) {
    approvers.push(await userValue(db, organizationId, approval.userId, approval.approver))
    credentials.push(...(await credentialValue(db, approval.credential, approval.apiKey)))
  }
  return { approvers, credentials }
}

/** `approvers` and `credentials` if every user of the organization but `excluded` approved, with every credential they hold. */
async function everyoneScope(db: Db, organizationId: string, excluded: ReadonlySet<string> = new Set()): Promise<Scope> {
  const approvers: Value[] = []
  const credentials: Value[] = []
  for (const user of await db.users(organizationId)) {
    if (excluded.has(user.id)) continue
    approvers.push(await userValue(db, organizationId, user.id))
    for (const key of await db.apiKeysOfUser(user.id)) credentials.push(apiKeyValue(key))
    for (const authenticator of await db.authenticatorsOfUser(user.id)) credentials.push(authenticatorValue(authenticator))
  }
  return { approvers, credentials }
}

/**
 * Whether more approvals could still let a policy allow the activity: some EFFECT_ALLOW policy
 * whose condition holds would apply if every user of the organization but `excluded` approved.
 */
export async function approvableByPolicy(
  db: Db,
  policies: readonly Policy[],
  organizationId: string,
  conditions: readonly Scope[],
  excluded?: ReadonlySet<string>,
) {
  const decision = decideEach(
    policies.filter((policy) => policy.effect === 'EFFECT_ALLOW'),
    { consensus: await everyoneScope(db, organizationId, excluded), conditions },
  )
  return decision.outcome === 'allow'
}

/** JSON as the policy language holds it: integers as ints, null entries left out. */
function jsonValue(json: unknown): Value | undefined {
  if (typeof json === 'string' || typeof json === 'boolean') return json
  if (typeof json === 'number') return Number.isInteger(json) ? BigInt(json) : String(json)
  if (Array.isArray(json)) return json.map(jsonValue).filter((item) => item !== undefined)
  if (typeof json === 'object' && json !== null)
    return Object.fromEntries(
      Object.entries(json)
        .map(([key, item]) => [key, jsonValue(item)] as const)
        .filter((entry): entry is readonly [string, Value] => entry[1] !== undefined),
    )
  return undefined
}

/** `eth.eip_712` of typed data: its primary type, domain (the four fields Turnkey lists, when given) and message. */
function typedDataValue(typed: TypedDataDefinition): Value {
  const domain = (typed.domain ?? {}) as Record<string, unknown>
  const fields: Record<string, Value> = {}
  if (typeof domain['name'] === 'string') fields['name'] = domain['name']
  if (typeof domain['version'] === 'string') fields['version'] = domain['version']
  const chainId = domain['chainId']
  if (typeof chainId === 'number' || typeof chainId === 'bigint' || (typeof chainId === 'string' && /^(0x[0-9a-fA-F]+|[0-9]+)$/.test(chainId)))
    fields['chain_id'] = BigInt(chainId)
  if (typeof domain['verifyingContract'] === 'string') fields['verifying_contract'] = domain['verifyingContract']
  return { primary_type: String(typed.primaryType), domain: fields, message: jsonValue(typed.message) ?? {} }
}

/** `eth` of one payload signed through sign_raw_payload(s): typed data or an EIP-7702 authorization; undefined for other encodings or a payload that does not parse (the signing refuses it then). */
function payloadValue(encoding: unknown, payload: unknown): Value | undefined {
  if (typeof payload !== 'string') return undefined
  if (encoding === 'PAYLOAD_ENCODING_EIP712') {
    const typed = typedDataOf(payload)
    return typed ? { eip_712: typedDataValue(typed) } : undefined
  }
  if (encoding === 'PAYLOAD_ENCODING_EIP7702_AUTHORIZATION') {
    const authorization = authorizationOf(payload)
    return authorization
      ? { eip_7702_authorization: { address: authorization.address, chain_id: BigInt(authorization.chainId), nonce: BigInt(authorization.nonce) } }
      : undefined
  }
  return undefined
}

/**
 * The condition's keywords for one activity: `activity`, and for signing and export what it
 * targets (`wallet`, `wallet_account`, `private_key`), the Ethereum transaction (`eth.tx`), typed
 * data (`eth.eip_712`) and EIP-7702 authorizations (`eth.eip_7702_authorization`). One scope per
 * payload for sign_raw_payloads, whose payloads the policies judge one by one (decideEach); one
 * scope for everything else.
 */
export async function conditionScopes(
  db: Db,
  organizationId: string,
  type: string,
  params: unknown,
  /** Filled with what the address `signWith` names, when it was read (for the signing to use). */
  read?: { signingKey?: SigningKeyRead },
): Promise<Scope[]> {
  const input = (params ?? {}) as Record<string, unknown>
  const kind = activityKind(type)
  const scope: Record<string, Value> = {
    activity: { type, ...(kind ? { kind } : {}), ...kindOf(type), params: paramsOf(type, params) as Record<string, Value> },
  }
  const walletValue = async (walletId: string) => {
    const wallet = await db.wallet(walletId, organizationId)
    if (wallet) scope['wallet'] = { id: wallet.id, imported: Boolean(wallet.imported), exported: Boolean(wallet.exported), label: wallet.name }
  }
  const privateKeyValue = async (privateKeyId: string) => {
    const key = await db.privateKey(privateKeyId, organizationId)
    if (!key) return undefined
    scope['private_key'] = { id: key.id, tags: await db.tagsOf(key.id), imported: Boolean(key.imported), exported: Boolean(key.exported), label: key.name }
    return key
  }
  const accountValue = async (address: string) => {
    const account = await db.accountByAddress(organizationId, address)
    if (!account) return undefined
    scope['wallet_account'] = { address: account.address }
    await walletValue(account.wallet_id)
    return account.address
  }

  const signWith = typeof input['signWith'] === 'string' ? input['signWith'] : undefined
  if (signWith) {
    // A private key by id or address, else a wallet account by address (as the signing resolves
    // it). Private keys' ids are UUIDs and addresses are not: each is looked up only as what it can be.
    // An address's holders are read in one statement.
    const byId = isPrivateKeyId(signWith)
    const held = byId ? undefined : await db.addressHolders(organizationId, signWith)
    if (held && read) read.signingKey = { organizationId, address: signWith, privateKeyId: held.privateKey?.private_key_id, account: held.account }
    const byAddress = held?.privateKey
    const keyId = byId ? signWith : byAddress?.private_key_id
    const key = keyId === undefined ? undefined : await privateKeyValue(keyId)
    let from: string | undefined
    if (key) from = byAddress?.address ?? (await db.privateKeyAddresses(key.id)).find((row) => row.format === 'ADDRESS_FORMAT_ETHEREUM')?.address
    else if (held?.account) {
      scope['wallet_account'] = { address: held.account.address }
      if (held.wallet)
        scope['wallet'] = { id: held.wallet.id, imported: Boolean(held.wallet.imported), exported: Boolean(held.wallet.exported), label: held.wallet.name }
      from = held.account.address
    }
    const unsigned = input['unsignedTransaction']
    if (type === 'ACTIVITY_TYPE_SIGN_TRANSACTION_V2' && typeof unsigned === 'string' && input['type'] === 'TRANSACTION_TYPE_ETHEREUM') {
      const tx = ethereumTransaction(unsigned, from ?? '')
      if (tx) scope['eth'] = tx
    }
  }
  if (typeof input['walletId'] === 'string') await walletValue(input['walletId'])
  if (typeof input['privateKeyId'] === 'string') await privateKeyValue(input['privateKeyId'])
  if (type === 'ACTIVITY_TYPE_EXPORT_WALLET_ACCOUNT' && typeof input['address'] === 'string') await accountValue(input['address'])
  // Typed data and EIP-7702 authorizations (what @turnkey/viem's signTypedData and
  // signAuthorization send through sign_raw_payload).
  if (type === 'ACTIVITY_TYPE_SIGN_RAW_PAYLOAD_V2') {
    const eth = payloadValue(input['encoding'], input['payload'])
    if (eth) scope['eth'] = eth
  }
  if (type === 'ACTIVITY_TYPE_SIGN_RAW_PAYLOADS' && Array.isArray(input['payloads']) && input['payloads'].length)
    return input['payloads'].map((payload) => {
      const eth = payloadValue(input['encoding'], payload)
      return eth ? { ...scope, eth } : scope
    })
  return [scope]
}

/**
 * Decides whether `caller` may run an activity in `organization`, as hosted Turnkey does:
 * - a parent organization's user may only start the authentication activities Turnkey lets a
 *   parent start for a sub-organization (PARENT_INITIATED); anything else is denied;
 * - a quorum of root users may do anything: with a threshold of one a root user runs it at once,
 *   with more it waits for the other root users' approvals (`'consensus'`);
 * - any other user needs a policy: an applicable EFFECT_DENY refuses, an applicable EFFECT_ALLOW
 *   allows, and without one the request is denied, except a user's own credentials and sessions;
 *   when a policy's condition holds but its consensus needs more approvers than the caller
 *   (`approvers.count() >= 2`), the activity waits for their approvals (`'consensus'`).
 * Activities only the root quorum decides are never granted by a policy, nor is a read-write
 * session for another root user.
 *
 * Runs inside the activity's transaction, before anything is written: a denial writes nothing.
 * `decision` is the policy engine's, when it ran (get_policy_evaluations lists it).
 *
 * @example
 * if ((await authorize(trx, { caller, organization, type, params })).verdict === 'consensus') // wait for approvals
 */
export async function authorize(
  db: Db,
  request: {
    caller: Caller
    organization: OrganizationRow
    type: string
    params: unknown
    /** The organization's root users when read along with `organization` (authentication's statement); else read here. */
    rootUserIds?: readonly string[] | undefined
    /** The caller's API key as authentication read it in this request; else read here. */
    apiKey?: ApiKeyRow | undefined
    /** The caller as `approvers` lists them, as authentication read them with that key; else read here. */
    approver?: Approver | undefined
  },
): Promise<{ verdict: 'run' | 'consensus'; decision?: PolicyDecision; signingKey?: SigningKeyRead }> {
  const { caller, organization, type, params } = request
  if (caller.homeOrganizationId !== organization.id) {
    if (PARENT_INITIATED.has(type)) return { verdict: 'run' }
    throw policyDenied()
  }
  const roots = request.rootUserIds ?? (await rootUserIds(db, organization.id))
  const isRoot = roots.includes(caller.userId)
  if (isRoot && organization.root_quorum_threshold <= 1) return { verdict: 'run' }
  if (ROOT_QUORUM_ONLY.has(type) || sessionForAnotherRoot(type, params, caller.userId, roots)) {
    if (isRoot) return { verdict: 'consensus' }
    throw policyDenied()
  }
  const policies = await db.policies(organization.id)
  const read: { signingKey?: SigningKeyRead } = {}
  const conditions = await conditionScopes(db, organization.id, type, params, read)
  const decision = decideEach(policies, {
    consensus: await consensusScope(db, organization.id, [
      { userId: caller.userId, credential: caller.credential, apiKey: request.apiKey, approver: request.approver },
    ]),
    conditions,
  })
  if (decision.outcome === 'explicit deny') throw policyDenied(decision)
  if (decision.outcome === 'allow' || allowedByDefault(type, params, caller.userId)) return { verdict: 'run', decision, ...read }
  if (isRoot) return { verdict: 'consensus', decision }
  // Only on the way to a denial: could other users' approvals still satisfy a policy?
  if (await approvableByPolicy(db, policies, organization.id, conditions)) return { verdict: 'consensus', decision }
  throw policyDenied(decision)
}
