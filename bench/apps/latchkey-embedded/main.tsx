import { createClient, embedded } from '@latchkey/core'
import { ConnectButton, LatchkeyProvider } from '@latchkey/react'
import { StrictMode } from 'react'
import { createRoot } from 'react-dom/client'
import { mainnet } from 'viem/chains'

// The minimal app plus the embedded-wallet connector: its code must load only when used.
const client = createClient({ chains: [mainnet], connectors: [embedded({ appName: 'Bench', backendUrl: 'https://backend.bench.test' })] })

createRoot(document.getElementById('root') as HTMLElement).render(
  <StrictMode>
    <LatchkeyProvider client={client}>
      <ConnectButton />
    </LatchkeyProvider>
  </StrictMode>,
)
