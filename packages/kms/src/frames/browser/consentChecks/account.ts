import { type Activity, assertType, isObject, unbound } from './activity.js'

// add_account: CREATE_WALLET_ACCOUNTS adding exactly the one Ethereum account the dialog names (its
// derivation path) to the requested wallet. The frame cannot tell the wallet id from the account,
// so it binds the payload to the request's; the kms scopes the id to the stamping user.

const ETHEREUM_ACCOUNT = { curve: 'CURVE_SECP256K1', pathFormat: 'PATH_FORMAT_BIP32', addressFormat: 'ADDRESS_FORMAT_ETHEREUM' } as const

export function checkAccount(activity: Activity, params: readonly unknown[]): undefined {
  assertType(activity, ['ACTIVITY_TYPE_CREATE_WALLET_ACCOUNTS'], 'a new account')
  const requested = isObject(params[0]) ? params[0] : {}
  if (typeof requested.path !== 'string' || requested.path === '') throw unbound("add_account needs the new account's derivation path")
  if (requested.walletId !== undefined && typeof requested.walletId !== 'string') throw unbound("add_account's walletId is not a string")
  const { walletId, accounts } = activity.parameters
  if (typeof walletId !== 'string' || walletId === '') throw unbound('the payload names no wallet')
  if (requested.walletId !== undefined && walletId !== requested.walletId)
    throw unbound(`the payload adds to the wallet ${walletId}, not to the requested wallet ${requested.walletId}`)
  if (!Array.isArray(accounts) || accounts.length !== 1)
    throw unbound(`the payload adds ${Array.isArray(accounts) ? accounts.length : 'no list of'} accounts, not the one requested`)
  const [account] = accounts
  if (!isObject(account) || account.path !== requested.path)
    throw unbound(`the payload adds the account at ${String(isObject(account) ? account.path : account)}, not at the requested ${requested.path}`)
  if (Object.entries(ETHEREUM_ACCOUNT).some(([field, value]) => account[field] !== value))
    throw unbound(`the payload's account is not an Ethereum account (${Object.values(ETHEREUM_ACCOUNT).join(', ')})`)
  return undefined
}
