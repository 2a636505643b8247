import { createClient } from '@latchkey/core'
import { ConnectButton, LatchkeyProvider } from '@latchkey/react'
import { StrictMode } from 'react'
import { createRoot } from 'react-dom/client'
import { mainnet } from 'viem/chains'

// The minimal Latchkey app: provider + ConnectButton, injected wallets only (EIP-6963 discovery).
const client = createClient({ chains: [mainnet] })

createRoot(document.getElementById('root') as HTMLElement).render(
  <StrictMode>
    <LatchkeyProvider client={client}>
      <ConnectButton />
    </LatchkeyProvider>
  </StrictMode>,
)
