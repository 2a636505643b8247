import { createClient, embedded } from '@latchkey/core'
import { ConnectButton, LatchkeyProvider } from '@latchkey/react'
import { createRoot } from 'react-dom/client'
import { defineChain } from 'viem'

// The page of passkeyCeremonies.e2e.ts: an app with our modal and the embedded connector, as an
// app configures it; `?rpId=` sets the connector's passkey relying party id (default: the host).
const chain = defineChain({
  id: 31337,
  name: 'Anvil',
  nativeCurrency: { name: 'Ether', symbol: 'ETH', decimals: 18 },
  rpcUrls: { default: { http: ['http://127.0.0.1:8545'] } },
})
const rpId = new URLSearchParams(location.search).get('rpId') ?? undefined
const client = createClient({ chains: [chain], connectors: [embedded({ appName: 'Ceremonies', backendUrl: 'http://localhost:9', rpId })] })

createRoot(document.getElementById('root') as HTMLElement).render(
  <LatchkeyProvider client={client}>
    <ConnectButton />
  </LatchkeyProvider>,
)
