import { en } from '../i18n/en.js'
import { reviewAuthorization } from './authorization.js'
import { reviewBatch } from './batch.js'
import { ReviewError, type ReviewErrorCode } from './errors.js'
import { reviewGrant } from './grant.js'
import { reviewMessage } from './message.js'
import { reviewTransaction } from './transaction.js'
import { reviewTypedData } from './typedData.js'
import type { Review, ReviewContext, WalletRequest } from './types.js'
import { orderWarnings } from './warnings.js'

// What the consent frame shows for a request: every request decoded (text, typed tree, calldata of
// the standard ABIs) and, for transactions and batches, simulated. A request that does not decode
// throws a ReviewError and leaves nothing to approve. Its warnings come each once, dangers first.

export { ReviewError, type ReviewErrorCode } from './errors.js'
export type * from './types.js'

/**
 * Decodes `request` for the consent dialog. Chain reads (token symbols and decimals, the fee) are
 * awaited; the simulation stays a pending promise on the result so the frame can show the rest first.
 *
 * @example
 * const review = await reviewRequest({ method: 'personal_sign', params: ['0x68656c6c6f', account] }, context)
 * review.rows // [{ label: 'Message', value: 'hello' }]
 */
export async function reviewRequest(request: WalletRequest, context: ReviewContext): Promise<Review> {
  const review = await decode(request, context)
  return { ...review, warnings: orderWarnings(review.warnings) }
}

async function decode(request: WalletRequest, context: ReviewContext): Promise<Review> {
  const params = Array.isArray(request.params) ? request.params : undefined
  if (!params) throw new ReviewError('UNSUPPORTED_METHOD', `The request's params are not a list`)
  switch (request.method) {
    case 'personal_sign':
      return reviewMessage(params, context)
    case 'eth_signTypedData_v4':
      return reviewTypedData(params, context)
    case 'eth_sendTransaction':
      return reviewTransaction(params, context)
    case 'wallet_sendCalls':
      return reviewBatch(params, context)
    case 'wallet_grantPermissions':
      return reviewGrant(params, context)
    case 'eip7702_authorization':
      return reviewAuthorization(params, context)
    case 'export_wallet':
      return {
        kind: 'export',
        title: en.titleExport,
        origin: context.origin,
        rows: [{ label: en.rowAccount, value: context.account }],
        warnings: [{ level: 'danger', text: en.warnExport }],
      }
    case 'add_credential':
      return {
        kind: 'credential',
        title: en.titleCredential,
        origin: context.origin,
        rows: [{ label: en.rowAccount, value: context.account }],
        warnings: [{ level: 'warning', text: en.warnCredential }],
      }
    case 'add_account': {
      const fields = firstParam(params)
      const path = text(fields, 'path', 'MALFORMED_ACCOUNT')
      const walletId = fields.walletId === undefined ? undefined : text(fields, 'walletId', 'MALFORMED_ACCOUNT')
      return {
        kind: 'account',
        title: en.titleAccount,
        origin: context.origin,
        rows: [
          { label: en.rowAccount, value: context.account },
          { label: 'Adds', value: `an Ethereum account derived at ${path}` },
          ...(walletId ? [{ label: en.rowWallet, value: walletId }] : []),
        ],
        warnings: [],
      }
    }
    case 'init_import':
      // Only a target key for the import window: nothing leaves the wallet, nothing is signed away.
      return {
        kind: 'import',
        title: en.titlePrepareImport,
        origin: context.origin,
        rows: [
          { label: en.rowAccount, value: context.account },
          { label: 'Opens', value: 'the import window: the phrase you type there is sealed to the key service, never shown to the app' },
        ],
        warnings: [],
      }
    case 'import_wallet':
      // The phrase was sealed to the kms in the import window: this frame never sees it.
      return {
        kind: 'import',
        title: en.titleImport,
        origin: context.origin,
        rows: [
          { label: en.rowAccount, value: context.account },
          {
            label: 'Import',
            value: `a wallet named ${JSON.stringify(text(firstParam(params), 'walletName', 'MALFORMED_IMPORT'))} (the phrase was typed in the import window)`,
          },
        ],
        warnings: [
          {
            level: 'warning',
            text: en.warnImport,
          },
        ],
      }
    default:
      throw new ReviewError('UNSUPPORTED_METHOD', `The wallet does not review "${String((request as { method: unknown }).method)}" requests`)
  }
}

const firstParam = (params: readonly unknown[]): Record<string, unknown> =>
  typeof params[0] === 'object' && params[0] !== null ? (params[0] as Record<string, unknown>) : {}

/** The request's `field`, a non-empty string, or a ReviewError naming it. */
function text(fields: Record<string, unknown>, field: string, code: ReviewErrorCode): string {
  const value = fields[field]
  if (typeof value !== 'string' || value === '') throw new ReviewError(code, `The request's "${field}" is not a non-empty string: ${String(value)}`)
  return value
}
