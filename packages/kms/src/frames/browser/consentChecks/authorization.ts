import { sameAddress, toAddress, toQuantity } from '../review/format.js'
import { type Activity, assertSignWith, assertType, isObject, type PayloadSettings, unbound } from './activity.js'

// eip7702_authorization: SIGN_RAW_PAYLOAD_V2 with PAYLOAD_ENCODING_EIP7702_AUTHORIZATION and the
// JSON {address, chainId, nonce}; the kms hashes it. A delegation hands the account to the
// delegate's code, so the frame signs one to the configured executor only, on the wallet's chain
// only (0, every chain, never), at the nonce the request names.

export function checkAuthorization(
  activity: Activity,
  params: readonly unknown[],
  context: { account: string; chainId: number },
  settings: PayloadSettings,
): undefined {
  assertType(activity, ['ACTIVITY_TYPE_SIGN_RAW_PAYLOAD_V2'], 'a raw payload signature')
  const { encoding, hashFunction, payload } = activity.parameters
  if (encoding !== 'PAYLOAD_ENCODING_EIP7702_AUTHORIZATION' || hashFunction !== 'HASH_FUNCTION_NOT_APPLICABLE')
    throw unbound('an authorization must be sent as PAYLOAD_ENCODING_EIP7702_AUTHORIZATION with HASH_FUNCTION_NOT_APPLICABLE')
  assertSignWith(activity, context.account)
  let signed: unknown
  try {
    signed = typeof payload === 'string' ? JSON.parse(payload) : undefined
  } catch {
    signed = undefined
  }
  if (!isObject(signed)) throw unbound('the payload holds no authorization {address, chainId, nonce}')
  const requested = isObject(params[0]) ? params[0] : {}
  const address = toAddress(signed.address)
  if (!settings.executor) throw unbound('this frame has no batch executor configured, so it signs no EIP-7702 authorization')
  if (!address || !sameAddress(address, settings.executor))
    throw unbound(`the authorization delegates to ${String(signed.address)}, not to the wallet's batch executor ${settings.executor}`)
  const chainId = toQuantity(signed.chainId)
  if (chainId !== BigInt(context.chainId))
    throw unbound(`the authorization is for chain ${String(signed.chainId)}, not for the wallet's chain ${context.chainId}`)
  const nonce = toQuantity(signed.nonce)
  const requestedNonce = toQuantity(requested.nonce)
  if (nonce === undefined || requestedNonce === undefined || nonce !== requestedNonce)
    throw unbound(`the authorization's nonce ${String(signed.nonce)} is not the requested nonce ${String(requested.nonce)}`)
  const requestedAddress = toAddress(requested.address ?? requested.contractAddress)
  if (!requestedAddress || !sameAddress(requestedAddress, address)) throw unbound('the payload does not sign the requested authorization')
  if (requested.chainId !== undefined && toQuantity(requested.chainId) !== chainId) throw unbound('the payload does not sign the requested authorization')
  return undefined
}
