import type { KmsGrant, KmsGrantPermission } from '@latchkey/constants/erc7715'
import { parseTransaction } from 'viem'
import type { FrameHandler, FrameRequest } from './channel.js'
import { type Activity, isObject } from './consentChecks/activity.js'
import { checkGrant } from './consentChecks/grant.js'
import { INVALID_REQUEST_CODE, MAX_CONSENT_TEXT, type ReviewAndStampValue } from './consentMessages.js'
import { FrameError } from './encoding.js'
import type { FrameKey } from './frameKeys.js'
import type { GrantKeyStore } from './grantKeys.js'
import { sameAddress } from './review/format.js'
import type { TokenInfo } from './review/tokens.js'
import { stampWithSigningKey } from './signingKey.js'
import { stamp } from './stamp.js'

// Signing without a prompt, only inside an ERC-7715 grant the user approved in this frame:
//  - REVIEW_AND_STAMP of wallet_grantPermissions, once approved, makes the grant's own key here
//    and stamps create_grant naming it; the STAMP answer carries that body as `payload`.
//      {type: BIND_GRANT, requestId, value: {grantId, publicKey}} → {type: GRANT_BOUND, value: true}
//    tells the frame the kms's id of that grant (the key only stamps once bound).
//      {type: STAMP_WITH_GRANT, requestId, value: {grantId, payload}} → {type: STAMP, value}
//    stamps with the grant's key, silently, only a sign_transaction of the grant's account on its
//    chain: the frame is no general silent stamper, and the kms applies the grant's rule.
//      {type: REVOKE_GRANT, requestId, value: {grantId, payload}} → {type: STAMP, value}
//    stamps revoke_grant of that grant (and nothing else) with the session key, silently (revoking
//    only takes power away), and forgets the grant's key here.
// An unknown, unbound, expired or revoked grant is an error; nothing is stamped.

export const STAMP_WITH_GRANT = 'STAMP_WITH_GRANT'
export const BIND_GRANT = 'BIND_GRANT'
export const REVOKE_GRANT = 'REVOKE_GRANT'

/** The longest symbol and the most decimals the kms's grant rule takes (packages/kms/src/grants/rule.ts). */
const MAX_SYMBOL = 32
const MAX_DECIMALS = 36

const invalid = (message: string) => new FrameError(message, INVALID_REQUEST_CODE)

/** `value.grantId` and `value.payload` (a JSON kms activity) of a grant request. */
function grantRequest(request: FrameRequest): { grantId: string; activity: Activity; payload: string } {
  const value = isObject(request.value) ? request.value : {}
  const { grantId, payload } = value
  if (typeof grantId !== 'string' || grantId === '' || grantId.length > 128) throw invalid(`${request.type} needs value {grantId, payload}`)
  if (typeof payload !== 'string' || payload.length === 0 || payload.length > MAX_CONSENT_TEXT)
    throw invalid(`${request.type} needs value {grantId, payload} (the body to stamp, a string)`)
  let body: unknown
  try {
    body = JSON.parse(payload)
  } catch {
    throw invalid(`${request.type}: the payload is not a JSON kms activity`)
  }
  if (!isObject(body) || !isObject(body.parameters)) throw invalid(`${request.type}: the payload is not a JSON kms activity`)
  return { grantId, activity: { type: body.type, parameters: body.parameters }, payload }
}

/**
 * After the user approved a grant: makes its key, names it in the create_grant body and stamps
 * that body with the session key. Answers the stamp and the body it covers.
 *
 * @example
 * return { type: 'STAMP', value: await stampNewGrant(value, { sessionKey, grantKeys, parentOrigin }) }
 */
export async function stampNewGrant(
  value: ReviewAndStampValue,
  frame: { sessionKey: FrameKey; grantKeys: GrantKeyStore; parentOrigin: string; readToken: (token: string) => Promise<TokenInfo | undefined> },
): Promise<{ stampHeaderName: 'X-Stamp'; stampHeaderValue: string; payload: string }> {
  const body = JSON.parse(value.payload) as { type: unknown; parameters: Record<string, unknown> & { apiKey: Record<string, unknown>; grant: KmsGrant } }
  const terms = checkGrant(body, value.request.params, value.context)
  const grant = await labelTokens(body.parameters.grant, frame.readToken)
  const key = await frame.grantKeys.create(frame.parentOrigin, terms)
  const payload = JSON.stringify({
    ...body,
    parameters: { ...body.parameters, grant, apiKey: { ...body.parameters.apiKey, publicKey: key.publicKeyHex } },
  })
  return { ...(await stampWithSigningKey(frame.sessionKey, payload)), payload }
}

/**
 * The grant with each token allowance's symbol and decimals as the review showed them (read from
 * the chain), so the kms's refusals read "5 TKN per 1 day", not in smallest units of an address.
 * Labels only: the kms enforces the amounts. A token that did not answer, or whose symbol the kms
 * would not take, stays unlabelled.
 */
async function labelTokens(grant: KmsGrant, readToken: (token: string) => Promise<TokenInfo | undefined>): Promise<KmsGrant> {
  const permissions: KmsGrantPermission[] = []
  for (const permission of grant.permissions) {
    if (permission.type !== 'erc20-recurring-allowance') {
      permissions.push(permission)
      continue
    }
    const info = await readToken(permission.data.address)
    const labelled = info && info.symbol.length <= MAX_SYMBOL && info.decimals <= MAX_DECIMALS
    permissions.push(labelled ? { ...permission, data: { ...permission.data, symbol: info.symbol, decimals: info.decimals } } : permission)
  }
  return { ...grant, permissions }
}

/**
 * The grant messages' handlers, for the consent frame's handler table.
 *
 * @example
 * handlers: { ...grantHandlers(grantKeyStore({ store: frameStore() })) }
 */
export function grantHandlers(grantKeys: GrantKeyStore): Record<string, FrameHandler> {
  return {
    async [BIND_GRANT](request, context) {
      const value = isObject(request.value) ? request.value : {}
      const { grantId, publicKey } = value
      if (typeof grantId !== 'string' || grantId === '' || grantId.length > 128 || typeof publicKey !== 'string')
        throw invalid('BIND_GRANT needs value {grantId, publicKey}')
      if (!(await grantKeys.bind(context.parentOrigin, publicKey, grantId)))
        throw invalid(`no approved grant key ${publicKey} waits for a grant id here (or grant ${grantId} is bound already)`)
      return { type: 'GRANT_BOUND', value: true }
    },
    async [STAMP_WITH_GRANT](request, context) {
      const { grantId, activity, payload } = grantRequest(request)
      const key = await grantKeys.byGrant(context.parentOrigin, grantId)
      if (!key) throw invalid(`no grant ${grantId} in force here: it was never approved in this frame, has expired or was revoked`)
      const { signWith, unsignedTransaction, type } = activity.parameters
      if (activity.type !== 'ACTIVITY_TYPE_SIGN_TRANSACTION_V2' || type !== 'TRANSACTION_TYPE_ETHEREUM')
        throw invalid(`a grant's key signs transactions only (ACTIVITY_TYPE_SIGN_TRANSACTION_V2), not ${String(activity.type)}`)
      if (typeof signWith !== 'string' || !sameAddress(signWith, key.account)) throw invalid(`grant ${grantId} signs for ${key.account} only`)
      let chainId: number | undefined
      try {
        chainId = parseTransaction(`0x${String(unsignedTransaction).replace(/^0x/, '')}`).chainId
      } catch {
        throw invalid('the payload is not a serialized Ethereum transaction')
      }
      if (chainId !== key.chainId) throw invalid(`grant ${grantId} signs on chain ${key.chainId} only`)
      return {
        type: 'STAMP',
        value: { stampHeaderName: 'X-Stamp', stampHeaderValue: await stamp({ key: key.privateKey, publicKey: key.publicKeyHex }, payload) },
      }
    },
    async [REVOKE_GRANT](request, context) {
      const { grantId, activity, payload } = grantRequest(request)
      if (activity.type !== 'ACTIVITY_TYPE_LATCHKEY_REVOKE_GRANT' || Object.keys(activity.parameters).length !== 1 || activity.parameters.grantId !== grantId)
        throw invalid(`REVOKE_GRANT stamps revoke_grant of grant ${grantId} only`)
      const sessionKey = await context.embeddedKey()
      await grantKeys.remove(context.parentOrigin, grantId)
      return { type: 'STAMP', value: await stampWithSigningKey(sessionKey, payload) }
    },
  }
}
