// ERC-7715 permissions to and from the kms's grants (a Latchkey extension: packages/kms README,
// "Grants"). `wallet_grantPermissions` becomes create_grant's parameters, read by the same reader
// the consent frame reviews it with (@latchkey/constants/erc7715), so what the user approved is
// what the kms enforces; list_grants becomes the answer of `wallet_getPermissions`.
import { GrantRequestProblem, type KmsGrantPermission, readGrantRequest, toKmsGrant } from '@latchkey/constants/erc7715'
import { type Address, getAddress, type Hex, numberToHex, toFunctionSelector } from 'viem'
import { GrantWithoutExpiryError, MalformedGrantError, UnknownPermissionError } from './errors.js'

/** A permission as create_grant takes it and list_grants answers it. */
export type KmsPermission = KmsGrantPermission

/** create_grant's parameters (`ACTIVITY_TYPE_LATCHKEY_CREATE_GRANT`). */
export type GrantParameters = {
  userId: string
  /** `publicKey` empty: the consent frame names its grant key there. */
  apiKey: { apiKeyName: string; publicKey: string }
  grant: { chainId: string; account: Address; expiry: string; permissions: KmsPermission[] }
}

/** A grant as list_grants answers it. */
export type KmsGrant = {
  grantId: string
  publicKey: string
  chainId: string
  account: string
  /** Unix seconds. */
  expiry: string
  permissions: readonly KmsPermission[]
}

/** One answer of `wallet_getPermissions` (the ERC's first shape), `context` naming the grant. */
export type PermissionResponse = {
  chainId: Hex
  address: Address
  expiry: number
  signer: { type: 'key'; data: { type: 'secp256r1'; publicKey: Hex } }
  permissions: ({ type: string; data: Record<string, unknown> } & { policies: [] })[]
  context: string
}

type Fields = Record<string, unknown>

/**
 * Checks one `wallet_grantPermissions` request (an element of its params, in either of the ERC's
 * shapes) with the reader the consent frame shares (@latchkey/constants/erc7715) and turns it into
 * create_grant's parameters for the wallet's `account` and `userId`, at `now` (unix ms). The
 * grant's key is left empty: the consent frame makes it once the user approved, names it and
 * stamps the body. Throws a GrantRequestError; touches nothing.
 *
 * @example
 * const parameters = toGrantParameters(params[0], { account, userId, now: Date.now() })
 */
export function toGrantParameters(
  request: unknown,
  options: { account: Address; userId: string; now: number; apiKeyName?: string | undefined },
): GrantParameters {
  let grant: ReturnType<typeof toKmsGrant>
  try {
    grant = toKmsGrant(readGrantRequest(request, options), options.account, (signature) => toFunctionSelector(`function ${signature}`))
  } catch (error) {
    if (!(error instanceof GrantRequestProblem)) throw error
    if (error.code === 'GRANT_WITHOUT_EXPIRY') throw new GrantWithoutExpiryError()
    if (error.code === 'UNKNOWN_PERMISSION') throw new UnknownPermissionError(error.message)
    throw new MalformedGrantError(error.message)
  }
  return { userId: options.userId, apiKey: { apiKeyName: options.apiKeyName ?? `grant ${new Date(options.now).toISOString()}`, publicKey: '' }, grant }
}

/**
 * The answer of `wallet_grantPermissions`: the request as granted, `context` naming the grant (what
 * `wallet_revokePermissions` takes back), and the account it acts for.
 *
 * @example
 * return toGrantAnswer(params[0], { grantId }, account)
 */
export function toGrantAnswer(request: Fields, created: { grantId: string }, account: Address) {
  return { ...request, context: created.grantId, accounts: [account] }
}

/**
 * The answer of `wallet_getPermissions`: each grant in force in the ERC's first shape (amounts as
 * hex quantities, ERC-20 allowances naming their `token`), `context` its grant id.
 *
 * @example
 * const { grants } = await kms.request('/public/v1/query/list_grants', { organizationId })
 * return toPermissionResponses(grants)
 */
export function toPermissionResponses(grants: readonly KmsGrant[]): PermissionResponse[] {
  return grants.map((grant) => ({
    chainId: numberToHex(BigInt(grant.chainId)),
    address: getAddress(grant.account),
    expiry: Number(grant.expiry),
    signer: { type: 'key', data: { type: 'secp256r1', publicKey: `0x${grant.publicKey}` } },
    permissions: grant.permissions.map((permission) => {
      if (permission.type === 'contract-call')
        return { type: permission.type, data: { address: getAddress(permission.data.address), calls: [...permission.data.calls] }, policies: [] }
      const limit = { allowance: numberToHex(BigInt(permission.data.allowance)), start: Number(permission.data.start), period: Number(permission.data.period) }
      if (permission.type === 'native-token-recurring-allowance') return { type: permission.type, data: limit, policies: [] }
      return { type: permission.type, data: { token: getAddress(permission.data.address), ...limit }, policies: [] }
    }),
    context: grant.grantId,
  }))
}
