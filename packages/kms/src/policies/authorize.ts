import { type Hex, parseTransaction } from 'viem'
import type { Caller } from '../context.js'
import type { Db } from '../db.js'
import { GrpcCode, KmsError } from '../errors.js'
import { rootUserIds } from '../organizations/quorum.js'
import type { OrganizationRow } from '../storage/tables.js'
import { decide, POLICY_DENIED_MESSAGE, type PolicyDecision, policyDenialDetail } from './engine.js'
import type { Scope } from './evaluate.js'
import { allowedByDefault, kindOf, PARENT_INITIATED, paramsOf, ROOT_QUORUM_ONLY } from './kinds.js'
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
  return { tx: fields }
}

/** The user as `approvers` lists them: id, tag ids, email and name (Turnkey's alias). */
async function userValue(db: Db, organizationId: string, userId: string): Promise<Value> {
  const user = await db.user(userId, organizationId)
  return { id: userId, tags: await db.tagsOf(userId), email: user?.email ?? '', alias: user?.name ?? '' }
}

/** The credential that stamped the request, as `credentials` lists it. */
async function credentialValue(db: Db, caller: Caller): Promise<Value[]> {
  if (!caller.credential) return []
  const apiKey = await db.apiKeyByPublicKey(caller.credential)
  if (apiKey) return [{ id: apiKey.id, user_id: apiKey.user_id, type: apiKey.credential_type, credential_id: '', public_key: apiKey.public_key }]
  const authenticator = await db.authenticatorByCredential(caller.credential)
  if (authenticator)
    return [
      {
        id: authenticator.id,
        user_id: authenticator.user_id,
        type: 'CREDENTIAL_TYPE_WEBAUTHN_AUTHENTICATOR',
        credential_id: authenticator.credential_id,
        public_key: authenticator.public_key,
      },
    ]
  return []
}

/**
 * The condition's keywords for one activity: `activity`, and for signing and export what it
 * targets (`wallet`, `wallet_account`, `private_key`) and the Ethereum transaction (`eth.tx`).
 */
async function conditionScope(db: Db, organizationId: string, type: string, params: unknown): Promise<Scope> {
  const input = (params ?? {}) as Record<string, unknown>
  const scope: Record<string, Value> = { activity: { type, ...kindOf(type), params: paramsOf(type, params) as Record<string, Value> } }
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
    // A private key by id or address, else a wallet account by address (as the signing resolves it).
    const byAddress = await db.privateKeyByAddress(organizationId, signWith)
    const key = await privateKeyValue(byAddress?.private_key_id ?? signWith)
    const from = key
      ? (byAddress?.address ?? (await db.privateKeyAddresses(key.id)).find((row) => row.format === 'ADDRESS_FORMAT_ETHEREUM')?.address)
      : await accountValue(signWith)
    const unsigned = input['unsignedTransaction']
    if (type === 'ACTIVITY_TYPE_SIGN_TRANSACTION_V2' && typeof unsigned === 'string' && input['type'] === 'TRANSACTION_TYPE_ETHEREUM') {
      const tx = ethereumTransaction(unsigned, from ?? '')
      if (tx) scope['eth'] = tx
    }
  }
  if (typeof input['walletId'] === 'string') await walletValue(input['walletId'])
  if (typeof input['privateKeyId'] === 'string') await privateKeyValue(input['privateKeyId'])
  if (type === 'ACTIVITY_TYPE_EXPORT_WALLET_ACCOUNT' && typeof input['address'] === 'string') await accountValue(input['address'])
  return scope
}

/**
 * Decides whether `caller` may run an activity in `organization`, as hosted Turnkey does:
 * - a parent organization's user may only start the authentication activities Turnkey lets a
 *   parent start for a sub-organization (PARENT_INITIATED); anything else is denied;
 * - a quorum of root users may do anything: with a threshold of one a root user runs it at once,
 *   with more it waits for the other root users' approvals (`'consensus'`);
 * - any other user needs a policy: an applicable EFFECT_DENY refuses, an applicable EFFECT_ALLOW
 *   allows, and without one the request is denied, except a user's own credentials and sessions.
 * Activities only the root quorum decides are never granted by a policy.
 *
 * Runs inside the activity's transaction, before anything is written: a denial writes nothing.
 *
 * @example
 * if ((await authorize(trx, { caller, organization, type, params })) === 'consensus') // wait for approvals
 */
export async function authorize(
  db: Db,
  request: { caller: Caller; organization: OrganizationRow; type: string; params: unknown },
): Promise<'run' | 'consensus'> {
  const { caller, organization, type, params } = request
  if (caller.homeOrganizationId !== organization.id) {
    if (PARENT_INITIATED.has(type)) return 'run'
    throw policyDenied()
  }
  const roots = await rootUserIds(db, organization.id)
  const isRoot = roots.includes(caller.userId)
  if (isRoot && organization.root_quorum_threshold <= 1) return 'run'
  if (ROOT_QUORUM_ONLY.has(type)) {
    if (isRoot) return 'consensus'
    throw policyDenied()
  }
  const decision = decide(await db.policies(organization.id), {
    consensus: { approvers: [await userValue(db, organization.id, caller.userId)], credentials: await credentialValue(db, caller) },
    condition: await conditionScope(db, organization.id, type, params),
  })
  if (decision.outcome === 'explicit deny') throw policyDenied(decision)
  if (decision.outcome === 'allow' || allowedByDefault(type, params, caller.userId)) return 'run'
  if (isRoot) return 'consensus'
  throw policyDenied(decision)
}
