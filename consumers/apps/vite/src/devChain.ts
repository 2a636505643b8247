import { defineChain } from 'viem'
import { anvil } from 'viem/chains'

/** The local anvil chain (id 31337) the consumer test starts; its RPC url is set when the app is built. */
export const devChain = defineChain({ ...anvil, rpcUrls: { default: { http: [import.meta.env.VITE_RPC_URL] } } })
