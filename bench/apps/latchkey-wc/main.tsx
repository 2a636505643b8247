import { createClient, walletConnect } from '@latchkey/core'
import { ConnectButton, LatchkeyProvider } from '@latchkey/react'
import { StrictMode } from 'react'
import { createRoot } from 'react-dom/client'
import { mainnet } from 'viem/chains'

// The minimal app plus the WalletConnect connector: the protocol must load only when used.
const client = createClient({
  chains: [mainnet],
  connectors: [walletConnect({ projectId: 'bench', metadata: { name: 'Bench', description: 'bench', url: 'https://bench.test', icons: [] } })],
})

createRoot(document.getElementById('root') as HTMLElement).render(
  <StrictMode>
    <LatchkeyProvider client={client}>
      <ConnectButton />
    </LatchkeyProvider>
  </StrictMode>,
)
