/// <reference types="vite/client" />
interface ImportMetaEnv {
  readonly VITE_LATCHKEY_CHAIN_A_RPC?: string
  readonly VITE_LATCHKEY_CHAIN_B_RPC?: string
  readonly VITE_LATCHKEY_RELAY_URL?: string
  readonly VITE_LATCHKEY_SERVER_URL?: string
  /** The EIP-7702 batch executor on both chains, from the devnet's dev.json. */
  readonly VITE_LATCHKEY_BATCH_EXECUTOR?: `0x${string}`
  /** The demo's test token (TKN) on both chains, from the devnet's dev.json. */
  readonly VITE_LATCHKEY_TOKEN?: `0x${string}`
  /** Each chain's ERC-4337 bundler, from the devnet's dev.json (sponsored gas). */
  readonly VITE_LATCHKEY_BUNDLER_A_URL?: string
  readonly VITE_LATCHKEY_BUNDLER_B_URL?: string
  /** The backend's ERC-7677 paymaster service, from the devnet's dev.json (sponsored gas). */
  readonly VITE_LATCHKEY_PAYMASTER_URL?: string
  /** The token paymaster on both chains, from the devnet's dev.json (gas paid in TKN). */
  readonly VITE_LATCHKEY_TOKEN_PAYMASTER?: `0x${string}`
}
