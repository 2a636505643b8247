import { defineChain } from 'viem'

const nativeCurrency = { name: 'Ether', symbol: 'ETH', decimals: 18 }

/** The two local anvil chains the consumer test starts; their RPC urls are set when the app is built. */
export const chainA = defineChain({ id: 31337, name: 'Anvil A', nativeCurrency, rpcUrls: { default: { http: [import.meta.env.VITE_RPC_URL] } } })
export const chainB = defineChain({ id: 31338, name: 'Anvil B', nativeCurrency, rpcUrls: { default: { http: [import.meta.env.VITE_RPC_URL_B] } } })
