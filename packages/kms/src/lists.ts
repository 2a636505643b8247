import { z } from 'zod'

// How long a request's lists may be. Every list in an activity's or a query's parameters has a
// maximum, so no one request can ask the kms for unbounded work (security review M4: one
// create_wallet of 1,900 accounts held the event loop for 5.6 s). Refused as InvalidArgument
// (code 3) naming the field, before anything is read or written.

/** Items in any one list of a request (users, root users, API keys, passkeys, policies, ids, tags…). */
export const MAX_LIST_ITEMS = 100
/** Accounts derived by one request (create_wallet, create_wallet_accounts, a sub-organization's wallet, import_wallet). */
export const MAX_ACCOUNTS_PER_REQUEST = 100
/** Accounts one wallet may hold in all: create_wallet_accounts beyond it is refused. */
export const MAX_ACCOUNTS_PER_WALLET = 1000

/**
 * A list of `item` of at most `max` entries, refused beyond with "at most {max} {what} in one request".
 *
 * @example
 * z.object({ apiKeys: listOf(apiKeyParams, 'API keys') })
 */
export const listOf = <item extends z.ZodType>(item: item, what: string, max = MAX_LIST_ITEMS) =>
  z.array(item).max(max, `at most ${max} ${what} in one request`)
