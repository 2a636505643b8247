// What only a transaction needs, loaded on the first one: viem's transaction serializer and the
// request filler (nonce, gas, fees). Signing in and signing messages never download it.
export { createClient, http, serializeTransaction } from 'viem'
export { prepareTransactionRequest } from 'viem/actions'
