import { ConnectButton } from '@latchkey/react'
import { embedded, LatchkeyWagmiProvider, walletConnect } from '@latchkey/wagmi'
import { QueryClient, QueryClientProvider } from '@tanstack/react-query'
import { StrictMode } from 'react'
import { createRoot } from 'react-dom/client'
import { mainnet } from 'viem/chains'
import { createConfig, http, useAccount, useConnect, WagmiProvider } from 'wagmi'
import { injected } from 'wagmi/connectors'

// The wagmi app of bench/apps/wagmi plus @latchkey/wagmi: its two connectors, LatchkeyWagmiProvider
// and Latchkey's ConnectButton (the modal, WalletConnect and the embedded wallet load later).
const config = createConfig({
  chains: [mainnet],
  connectors: [injected(), walletConnect(), embedded({ appName: 'Bench' })],
  transports: { [mainnet.id]: http() },
})
const queryClient = new QueryClient()

function Connect() {
  const { address } = useAccount()
  const { connect, connectors } = useConnect()
  if (address) return <p>{address}</p>
  return (
    <button type="button" onClick={() => connectors[0] && connect({ connector: connectors[0] })}>
      Connect with wagmi
    </button>
  )
}

createRoot(document.getElementById('root') as HTMLElement).render(
  <StrictMode>
    <WagmiProvider config={config}>
      <QueryClientProvider client={queryClient}>
        <LatchkeyWagmiProvider>
          <ConnectButton />
          <Connect />
        </LatchkeyWagmiProvider>
      </QueryClientProvider>
    </WagmiProvider>
  </StrictMode>,
)
