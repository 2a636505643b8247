import { defineChain } from 'viem'

const ether = { name: 'Ether', symbol: 'ETH', decimals: 18 } as const

/** A chain's ERC-4337 bundler (viem's `rpcUrls.bundler`), where the embedded wallet sends sponsored calls. */
const bundler = (url: string | undefined) => (url ? { bundler: { http: [url] } } : {})

/** The two local anvil chains `npm start` runs; the RPC and bundler urls come from the build's environment. */
export const chainA = defineChain({
  id: 31337,
  name: 'Anvil A',
  nativeCurrency: ether,
  rpcUrls: {
    default: { http: [import.meta.env.VITE_LATCHKEY_CHAIN_A_RPC ?? 'http://127.0.0.1:8545'] },
    ...bundler(import.meta.env.VITE_LATCHKEY_BUNDLER_A_URL),
  },
  blockExplorers: { default: { name: 'Demo explorer', url: '/explorer/31337' } },
})

export const chainB = defineChain({
  id: 31338,
  name: 'Anvil B',
  nativeCurrency: ether,
  rpcUrls: {
    default: { http: [import.meta.env.VITE_LATCHKEY_CHAIN_B_RPC ?? 'http://127.0.0.1:8546'] },
    ...bundler(import.meta.env.VITE_LATCHKEY_BUNDLER_B_URL),
  },
  blockExplorers: { default: { name: 'Demo explorer', url: '/explorer/31338' } },
})

export const chains = [chainA, chainB] as const
