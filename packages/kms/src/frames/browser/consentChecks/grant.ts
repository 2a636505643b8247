import { toKmsGrant } from '@latchkey/constants/erc7715'
import { toFunctionSelector } from 'viem'
import { readGrant } from '../review/grant.js'
import { type Activity, assertType, isObject, unbound } from './activity.js'

// wallet_grantPermissions: create_grant (a Latchkey activity) of exactly the grant the dialog
// shows, read by the reader the embedded wallet shares, for this account. Its key is left empty
// by the page: the frame makes the grant's key once the user approved, and names it there
// (consentGrants.ts), so the page never picks the key that signs without asking.

/** The create_grant activity type. */
export const CREATE_GRANT = 'ACTIVITY_TYPE_LATCHKEY_CREATE_GRANT'

/** Canonical JSON (keys sorted), so two grants compare by content, not by key order. */
const canonical = (value: unknown): string =>
  JSON.stringify(value, (_key, item: unknown) =>
    isObject(item)
      ? Object.fromEntries(
          Object.keys(item)
            .sort()
            .map((name) => [name, item[name]]),
        )
      : item,
  )

/** The grant's account, chain and expiry (unix ms), for the key the frame makes on Approve. */
export type GrantTerms = { readonly account: `0x${string}`; readonly chainId: number; readonly expiresAt: number }

export function checkGrant(activity: Activity, params: readonly unknown[], context: { account: `0x${string}` }, now = Date.now()): GrantTerms {
  assertType(activity, [CREATE_GRANT], 'a grant')
  if (params.length !== 1) throw unbound('a grant request must ask for exactly one grant')
  const read = readGrant(params[0], context, now)
  const expected = toKmsGrant(read, context.account, (signature) => toFunctionSelector(`function ${signature}`))
  const { userId, apiKey, grant, ...others } = activity.parameters
  if (Object.keys(others).length > 0) throw unbound(`the grant's parameters carry ${Object.keys(others).join(', ')}, which the request does not`)
  if (typeof userId !== 'string' || userId === '') throw unbound('the grant names no user')
  if (!isObject(apiKey) || typeof apiKey.apiKeyName !== 'string' || apiKey.publicKey !== '' || Object.keys(apiKey).length !== 2)
    throw unbound("the grant's key must be left for this frame to make: apiKey {apiKeyName, publicKey: ''}")
  if (!isObject(grant) || typeof grant.account !== 'string' || grant.account.toLowerCase() !== context.account.toLowerCase())
    throw unbound(`the grant is not for the account ${context.account}`)
  if (canonical({ ...grant, account: context.account }) !== canonical(expected)) throw unbound('the payload does not create the grant shown')
  return { account: context.account, chainId: Number(read.chainId), expiresAt: Number(read.expiry) * 1000 }
}
