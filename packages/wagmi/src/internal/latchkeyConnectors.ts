// Loaded with the first use of a connector of @latchkey/wagmi: core's connectors and the store
// beside wagmi's. Nothing here is in a wagmi app's first download.
import { createConnectionStore, embedded, SESSION_FIELDS, walletConnect } from '@latchkey/core'

/** @internal Core's connection store keeping only what wagmi's has no place for (the WalletConnect session). */
export const store = createConnectionStore({ keep: SESSION_FIELDS })

export { embedded, walletConnect }
