import { getAddress, type Hex, parseTransaction } from 'viem'
import { delegationRefused, opaqueHashRefused, unframedPayloadRefused } from '../errors.js'
import { authorizationOf } from '../ethereum.js'

// What a sub-organization (an embedded wallet's user) may sign (security review H1, fix 4): only
// payloads the kms can read, so policies and the consent frame see what is signed, and EIP-7702
// delegations only to the configured delegates (the batch executor) on one chain. A parent
// organization's users keep opaque hashes and any delegation: their backends sign what they choose.

/** Encodings whose bytes are the message itself: with no hash function to apply, they are an opaque digest. */
const BYTE_ENCODINGS = new Set(['PAYLOAD_ENCODING_HEXADECIMAL', 'PAYLOAD_ENCODING_TEXT_UTF8'])
const NO_HASH = new Set(['HASH_FUNCTION_NO_OP', 'HASH_FUNCTION_NOT_APPLICABLE'])

/**
 * Whether `payload` (in `encoding`) starts with EIP-191's 0x19: a personal message ("\x19Ethereum
 * Signed Message:\n…") or EIP-712 ("\x19\x01…"). No transaction does (typed ones start 0x01–0x04,
 * legacy RLP at 0xc0 or above), so keccak256 of such bytes is never a transaction's signing hash.
 */
function isEip191Framed(payload: unknown, encoding: unknown): boolean {
  if (typeof payload !== 'string') return true // not bytes at all: the signing refuses it
  if (encoding === 'PAYLOAD_ENCODING_TEXT_UTF8') return payload.startsWith('\x19')
  return /^(?:0x)?19/i.test(payload)
}

/** One EIP-7702 authorization: the contract the account delegates to, on which chain. */
type Delegation = { address: string; chainId: number }

function refuseDelegation(delegation: Delegation, delegates: ReadonlySet<string>) {
  if (delegation.chainId === 0 || !delegates.has(delegation.address.toLowerCase())) throw delegationRefused(getAddress(delegation.address), delegation.chainId)
}

/** The authorization list of a type-4 transaction; none for other types, or for bytes that do not parse (the signing refuses those). */
function delegationsOf(unsignedTransaction: unknown): Delegation[] {
  if (typeof unsignedTransaction !== 'string') return []
  try {
    const parsed = parseTransaction((unsignedTransaction.startsWith('0x') ? unsignedTransaction : `0x${unsignedTransaction}`) as Hex)
    return parsed.type === 'eip7702' ? (parsed.authorizationList ?? []).map(({ address, chainId }) => ({ address, chainId })) : []
  } catch {
    return []
  }
}

/**
 * Refuses (PermissionDenied, before anything is written) a signing request of a sub-organization's
 * user that the kms could not read or that delegates the account elsewhere:
 * - sign_raw_payload(s) of hexadecimal or text bytes with HASH_FUNCTION_NO_OP or NOT_APPLICABLE (a
 *   32-byte hash of anything);
 * - sign_raw_payload(s) of hexadecimal or text bytes with HASH_FUNCTION_KECCAK256 that are not
 *   EIP-191 framed (first byte 0x19): the keccak of a serialized unsigned transaction is its
 *   signing hash, which would sign it past the transaction's rules. The EIP-191 preimage of a
 *   message, and the EIP-712 and EIP-7702 encodings, pass;
 * - an EIP-7702 authorization, as a payload or in a type-4 transaction's authorization list, to an
 *   address not in `delegates` (lowercase) or for chain id 0 (every chain).
 * Payloads that do not parse are left to the signing, which refuses them.
 *
 * @example
 * refuseUnreadableSigning('ACTIVITY_TYPE_SIGN_RAW_PAYLOAD_V2', params, new Set([executor.toLowerCase()]))
 */
export function refuseUnreadableSigning(type: string, params: unknown, delegates: ReadonlySet<string>): void {
  const input = (params ?? {}) as Record<string, unknown>
  if (type === 'ACTIVITY_TYPE_SIGN_TRANSACTION_V2') {
    for (const delegation of delegationsOf(input['unsignedTransaction'])) refuseDelegation(delegation, delegates)
    return
  }
  if (type !== 'ACTIVITY_TYPE_SIGN_RAW_PAYLOAD_V2' && type !== 'ACTIVITY_TYPE_SIGN_RAW_PAYLOADS') return
  const payloads = type === 'ACTIVITY_TYPE_SIGN_RAW_PAYLOAD_V2' ? [input['payload']] : Array.isArray(input['payloads']) ? input['payloads'] : []
  if (BYTE_ENCODINGS.has(input['encoding'] as string)) {
    if (NO_HASH.has(input['hashFunction'] as string)) throw opaqueHashRefused()
    if (input['hashFunction'] === 'HASH_FUNCTION_KECCAK256' && !payloads.every((payload) => isEip191Framed(payload, input['encoding'])))
      throw unframedPayloadRefused()
    return
  }
  if (input['encoding'] !== 'PAYLOAD_ENCODING_EIP7702_AUTHORIZATION') return
  for (const payload of payloads) {
    const authorization = typeof payload === 'string' ? authorizationOf(payload) : undefined
    if (authorization) refuseDelegation(authorization, delegates)
  }
}
