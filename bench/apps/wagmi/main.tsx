import { QueryClient, QueryClientProvider } from '@tanstack/react-query'
import { StrictMode } from 'react'
import { createRoot } from 'react-dom/client'
import { mainnet } from 'viem/chains'
import { createConfig, http, useAccount, useConnect, WagmiProvider } from 'wagmi'
import { injected } from 'wagmi/connectors'

// The reference a wagmi app starts from: wagmi's own injected() (and its EIP-6963 discovery), a
// button that connects through wagmi, the account it shows.
const config = createConfig({ chains: [mainnet], connectors: [injected()], transports: { [mainnet.id]: http() } })
const queryClient = new QueryClient()

function Connect() {
  const { address } = useAccount()
  const { connect, connectors } = useConnect()
  if (address) return <p>{address}</p>
  return (
    <button type="button" onClick={() => connectors[0] && connect({ connector: connectors[0] })}>
      Connect Wallet
    </button>
  )
}

createRoot(document.getElementById('root') as HTMLElement).render(
  <StrictMode>
    <WagmiProvider config={config}>
      <QueryClientProvider client={queryClient}>
        <Connect />
      </QueryClientProvider>
    </WagmiProvider>
  </StrictMode>,
)
