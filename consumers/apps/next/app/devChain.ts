import { defineChain } from 'viem'
import { anvil } from 'viem/chains'

const rpcUrl = process.env.NEXT_PUBLIC_RPC_URL
if (!rpcUrl) throw new Error('Set NEXT_PUBLIC_RPC_URL to the JSON-RPC url of the chain when building, e.g. http://127.0.0.1:8545')

/** The local anvil chain (id 31337) the consumer test starts; its RPC url is set when the app is built. */
export const devChain = defineChain({ ...anvil, rpcUrls: { default: { http: [rpcUrl] } } })
