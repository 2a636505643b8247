// ERC-7715 grants in the wallet, loaded with the first grant request or transaction: which grant,
// if any, covers a transaction (so the wallet signs it with the grant's key in the consent frame,
// with no prompt), and how a kms refusal under a grant reaches the app. The kms applies the
// grant's rule itself (packages/kms/src/grants/rule.ts); this only picks the grant whose scope the
// transaction is in, so a transaction outside every grant gets the normal Approve dialog.
import { BATCH_CALLS_PARAMETERS, BATCH_EXECUTOR_ABI, BATCH_MODE } from '@latchkey/constants/batch-executor'
import { type Address, decodeAbiParameters, decodeFunctionData, type Hex, isAddressEqual, sliceHex, type TransactionSerializable } from 'viem'
import { GrantRefusedError, ProviderRpcError } from './errors.js'
import { TurnkeyRequestError } from './kmsClient.js'
import type { KmsGrant } from './permissions.js'

/** ERC-20 transfer, approve and transferFrom: what an ERC-20 allowance lets its token be called with. */
const ERC20_SPENDING = ['0xa9059cbb', '0x095ea7b3', '0x23b872dd']

type Call = { to: Address; value: bigint; data: Hex }

/** The calls of a transaction as the kms judges them: a call to the account itself is the batch executor's batch. */
function callsOf(transaction: TransactionSerializable, account: Address): Call[] | undefined {
  const to = transaction.to
  if (!to) return undefined
  const data = transaction.data ?? '0x'
  const value = transaction.value ?? 0n
  if (!isAddressEqual(to, account) || data === '0x') return [{ to, value, data }]
  try {
    const { args } = decodeFunctionData({ abi: BATCH_EXECUTOR_ABI, data })
    if (args[0].toLowerCase() !== BATCH_MODE) return undefined
    const [calls] = decodeAbiParameters(BATCH_CALLS_PARAMETERS, args[1])
    return [{ to, value, data: '0x' }, ...calls.map((call) => ({ to: call.to, value: call.value, data: call.data }))]
  } catch {
    return undefined
  }
}

function covers(grant: KmsGrant, call: Call): boolean {
  if (call.value > 0n && !grant.permissions.some((permission) => permission.type === 'native-token-recurring-allowance')) return false
  if (call.data === '0x') return true
  if (call.data.length < 10) return false
  const selector = sliceHex(call.data, 0, 4).toLowerCase()
  return grant.permissions.some(
    (permission) =>
      (permission.type === 'erc20-recurring-allowance' && isAddressEqual(permission.data.address, call.to) && ERC20_SPENDING.includes(selector)) ||
      (permission.type === 'contract-call' &&
        isAddressEqual(permission.data.address, call.to) &&
        permission.data.calls.some((listed) => listed.toLowerCase() === selector)),
  )
}

/** Whether `grant` may pay network fees: the kms charges a transaction's fee ceiling to the native allowance, and refuses any fee without one. */
const paysFees = (grant: KmsGrant) => grant.permissions.some((permission) => permission.type === 'native-token-recurring-allowance')

/**
 * The first grant in force at `now` (unix ms) whose scope covers `transaction` of `account`: its
 * chain and account, every call's contract and selector (or an ERC-20 allowance's token), and
 * native value, or a fee (gas × maxFeePerGas or gasPrice), only with a native allowance. An
 * EIP-7702 authorization is never inside a grant.
 *
 * @example
 * const grant = coveringGrant(grants, { chainId: 31337, to: game, data }, account, Date.now())
 */
export function coveringGrant(grants: readonly KmsGrant[], transaction: TransactionSerializable, account: Address, now: number): KmsGrant | undefined {
  if ('authorizationList' in transaction && transaction.authorizationList?.length) return undefined
  const calls = callsOf(transaction, account)
  if (!calls || calls.every((call) => call.value === 0n && call.data === '0x')) return undefined
  const { gas, maxFeePerGas, gasPrice } = transaction as { gas?: bigint | undefined; maxFeePerGas?: bigint | undefined; gasPrice?: bigint | undefined }
  const fees = (gas ?? 0n) * (maxFeePerGas ?? gasPrice ?? 0n)
  return grants.find(
    (grant) =>
      Number(grant.expiry) * 1000 > now &&
      (fees === 0n || paysFees(grant)) &&
      Number(grant.chainId) === transaction.chainId &&
      grant.account.toLowerCase() === account.toLowerCase() &&
      calls.every((call) => covers(grant, call)),
  )
}

/**
 * A refusal of a request signed under `grantId` as the app sees it: the kms's refusal under the
 * grant's rule (its ErrorInfo reason, domain latchkey.grants), or the frame's (it holds no key
 * for the grant), as GrantRefusedError; anything else unchanged.
 *
 * @example
 * try { … } catch (error) { throw asGrantRefusal(error, grantId) }
 */
export function asGrantRefusal(error: unknown, grantId: string): unknown {
  if (error instanceof TurnkeyRequestError) {
    const details = Array.isArray(error.details) ? (error.details as { reason?: unknown; domain?: unknown }[]) : []
    const info = details.find((detail) => detail.domain === 'latchkey.grants')
    const message = error.message.replace(/^Turnkey error \d+: /, '').replace(/ \(Details: .*\)$/s, '')
    if (info) return new GrantRefusedError({ reason: String(info.reason), details: `${message} (grant ${grantId})`, cause: error })
    if (error.code === 16) return new GrantRefusedError({ reason: 'GRANT_EXPIRED', details: `${message} (grant ${grantId})`, cause: error })
  }
  if (error instanceof ProviderRpcError && error.code === -32602)
    return new GrantRefusedError({ reason: 'GRANT_KEY_MISSING', details: `${error.message} (grant ${grantId})`, cause: error })
  return error
}
