/// <reference types="vite/client" />
interface ImportMetaEnv {
  readonly VITE_LATCHKEY_CHAIN_A_RPC?: string
  readonly VITE_LATCHKEY_CHAIN_B_RPC?: string
  readonly VITE_LATCHKEY_RELAY_URL?: string
  readonly VITE_LATCHKEY_SERVER_URL?: string
}
