/// <reference types="vite/client" />

interface ImportMetaEnv {
  /** JSON-RPC urls of the two chains the app runs against (ids 31337 and 31338). */
  readonly VITE_RPC_URL: string
  readonly VITE_RPC_URL_B: string
  /** Latchkey's relay for WalletConnect, and the app backend for the embedded wallet. */
  readonly VITE_RELAY_URL: string
  readonly VITE_BACKEND_URL: string
}
