/// <reference types="vite/client" />

interface ImportMetaEnv {
  /** JSON-RPC url of the chain the app runs against, e.g. `http://127.0.0.1:8545`. */
  readonly VITE_RPC_URL: string
}
