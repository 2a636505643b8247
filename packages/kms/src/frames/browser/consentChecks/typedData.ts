import { hashTypedData } from 'viem'
import { sameAddress, toQuantity } from '../review/format.js'
import { type Activity, assertSignWith, assertType, isObject, unbound } from './activity.js'

// eth_signTypedData_v4: SIGN_RAW_PAYLOAD_V2 with PAYLOAD_ENCODING_EIP712 and the typed data as
// JSON; the kms computes the EIP-712 hash. The two are compared as what gets signed (their
// EIP-712 hashes), not as text: key order and number spelling do not matter, any field does.

/** @turnkey/viem sends HASH_FUNCTION_NO_OP; the contract names NOT_APPLICABLE. */
const HASH_FUNCTIONS = ['HASH_FUNCTION_NOT_APPLICABLE', 'HASH_FUNCTION_NO_OP']

function typedHash(raw: unknown, what: string): string {
  let data = raw
  if (typeof raw === 'string')
    try {
      data = JSON.parse(raw)
    } catch {
      throw unbound(`${what} is not JSON typed data`)
    }
  if (!isObject(data) || !isObject(data.types) || typeof data.primaryType !== 'string') throw unbound(`${what} is not EIP-712 typed data`)
  // A chain id written as a hex or decimal string is the same chain id (viem would drop it from
  // the implied EIP712Domain type and hash another domain).
  const domain = isObject(data.domain) ? data.domain : {}
  const chainId = toQuantity(domain.chainId)
  const canonical = { ...data, domain: chainId === undefined ? domain : { ...domain, chainId } }
  try {
    return hashTypedData(canonical as Parameters<typeof hashTypedData>[0])
  } catch {
    throw unbound(`${what} does not match its EIP-712 types`)
  }
}

export function checkTypedData(activity: Activity, params: readonly unknown[], account: string): undefined {
  assertType(activity, ['ACTIVITY_TYPE_SIGN_RAW_PAYLOAD_V2'], 'a raw payload signature')
  const { encoding, hashFunction, payload } = activity.parameters
  if (encoding !== 'PAYLOAD_ENCODING_EIP712' || !HASH_FUNCTIONS.includes(String(hashFunction)))
    throw unbound('typed data must be sent as PAYLOAD_ENCODING_EIP712 with HASH_FUNCTION_NOT_APPLICABLE')
  assertSignWith(activity, account)
  const [address, requested] = params
  if (typeof address !== 'string' || !sameAddress(address, account)) throw unbound(`the typed data is to be signed by ${String(address)}, not by ${account}`)
  if (typedHash(payload, 'the payload') !== typedHash(requested, 'the requested typed data'))
    throw unbound('the payload does not sign the requested typed data')
  return undefined
}
