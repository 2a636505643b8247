import { checkAccount } from './consentChecks/account.js'
import { type Activity, type PayloadFacts, type PayloadSettings, unbound } from './consentChecks/activity.js'
import { checkAuthorization } from './consentChecks/authorization.js'
import { checkCalls } from './consentChecks/calls.js'
import { checkCredential } from './consentChecks/credential.js'
import { checkExport } from './consentChecks/exportKey.js'
import { checkGrant } from './consentChecks/grant.js'
import { checkImport, checkInitImport } from './consentChecks/importWallet.js'
import { checkTransaction } from './consentChecks/transaction.js'
import { checkTypedData } from './consentChecks/typedData.js'
import type { ReviewAndStampValue } from './consentMessages.js'
import { bytesToHex, concatBytes, hexToBytes, utf8Encode } from './encoding.js'
import { en } from './i18n/en.js'
import type { ReviewRow } from './review/types.js'

// The stamp authorises the payload, not the picture: a page could show the user one request and
// ask for a stamp over another. So before anything is shown, the payload (the kms activity the
// stamp will authorise) must be exactly what the reviewed request needs. Each method's check is
// its own module (consentChecks/); any other method is refused.

export type { PayloadFacts, PayloadSettings } from './consentChecks/activity.js'

/** What a grant adds to its review: the frame signs inside it without asking again. */
export const GRANT_SIGNS_ROW: ReviewRow = { label: en.rowSigns, value: 'inside these limits until it expires, without asking you again' }

/**
 * Throws unless `payload` is the kms activity that carries out `request` for `context.account`;
 * answers what only the payload tells (an export's key, a credential's expiry) for the dialog.
 *
 * @example
 * assertPayloadMatches({ request, payload, context }) // personal_sign: sign_raw_payload of its EIP-191 preimage, keccak256
 */
export function assertPayloadMatches({ request, payload, context }: ReviewAndStampValue, settings: PayloadSettings = {}): PayloadFacts | undefined {
  let body: unknown
  try {
    body = JSON.parse(payload)
  } catch {
    throw unbound('the payload is not a JSON kms request')
  }
  const activity = body as { type?: unknown; parameters?: Record<string, unknown> }
  if (typeof activity !== 'object' || activity === null || typeof activity.parameters !== 'object' || activity.parameters === null)
    throw unbound('the payload is not a kms activity')
  switch (request.method) {
    case 'personal_sign': {
      const [data] = request.params
      if (typeof data !== 'string') throw unbound('personal_sign needs the message as a string')
      // The kms hashes the EIP-191 preimage itself (keccak256), so it and its policies read the message.
      const { signWith, payload: preimage, encoding, hashFunction } = activity.parameters
      if (
        activity.type !== 'ACTIVITY_TYPE_SIGN_RAW_PAYLOAD_V2' ||
        encoding !== 'PAYLOAD_ENCODING_HEXADECIMAL' ||
        hashFunction !== 'HASH_FUNCTION_KECCAK256' ||
        typeof signWith !== 'string' ||
        signWith.toLowerCase() !== context.account.toLowerCase() ||
        typeof preimage !== 'string' ||
        preimage.replace(/^0x/, '').toLowerCase() !== eip191Preimage(data)
      )
        throw unbound('the payload does not sign this message with this account')
      return
    }
    case 'eth_signTypedData_v4':
      return checkTypedData(activity as Activity, request.params, context.account)
    case 'eth_sendTransaction':
      return checkTransaction(activity as Activity, request.params, context, settings)
    case 'wallet_sendCalls':
      return checkCalls(activity as Activity, request.params, context, settings)
    case 'wallet_grantPermissions':
      checkGrant(activity as Activity, request.params, context)
      return { rows: [GRANT_SIGNS_ROW] }
    case 'eip7702_authorization':
      return checkAuthorization(activity as Activity, request.params, context, settings)
    case 'export_wallet':
      return checkExport(activity as Activity, context, settings)
    case 'add_credential':
      return checkCredential(activity as Activity)
    case 'add_account':
      return checkAccount(activity as Activity, request.params)
    case 'init_import':
      return checkInitImport(activity as Activity)
    case 'import_wallet':
      return checkImport(activity as Activity, request.params)
    default:
      throw unbound(`${(request as { method: string }).method} cannot be stamped by this frame`)
  }
}

/** "\x19Ethereum Signed Message:\n" ‖ length ‖ message, hex without 0x; the message as personal_sign reads it. */
function eip191Preimage(data: string): string {
  const message = /^0x(?:[0-9a-fA-F]{2})*$/.test(data) ? hexToBytes(data) : utf8Encode(data)
  return bytesToHex(concatBytes(utf8Encode(`\x19Ethereum Signed Message:\n${message.length}`), message))
}
