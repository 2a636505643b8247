import { createClient, serverAdapter } from '@latchkey/core'
import { ConnectButton, LatchkeyProvider } from '@latchkey/react'
import { StrictMode } from 'react'
import { createRoot } from 'react-dom/client'
import { mainnet } from 'viem/chains'

// The minimal app with Sign-In with Ethereum required after connect: the message builder and the
// signing code must load with the first sign-in, not with the page.
const client = createClient({ chains: [mainnet], signIn: serverAdapter('https://backend.bench.test') })

createRoot(document.getElementById('root') as HTMLElement).render(
  <StrictMode>
    <LatchkeyProvider client={client}>
      <ConnectButton requireSignIn />
    </LatchkeyProvider>
  </StrictMode>,
)
