import { createClient, embedded, serverAdapter, walletConnect } from '@latchkey/core'
import { LatchkeyProvider } from '@latchkey/react'
import { StrictMode, useState } from 'react'
import { createRoot } from 'react-dom/client'
import { App } from './App.js'
import { chains } from './chains.js'
import { startDevWallet } from './devWallet.js'
import { Explorer } from './Explorer.js'
import { Headless } from './Headless.js'
import { languageFromUrl } from './Language.js'
import { OAuthCallback } from './OAuthCallback.js'
import './demo.css'

// On in the demo only: a wallet for newcomers without an extension.
startDevWallet()

// Our backend (8787): embedded-wallet sign-in and Sign-In with Ethereum for every wallet.
const backendUrl = import.meta.env.VITE_LATCHKEY_SERVER_URL ?? 'http://localhost:8787'

// Mobile wallets pair through our relay (npm start runs it on 5555); the reference wallet on 5174 is the "phone".
const client = createClient({
  chains,
  connectors: [
    walletConnect({
      relayUrl: import.meta.env.VITE_LATCHKEY_RELAY_URL ?? 'ws://127.0.0.1:5555',
      metadata: { name: 'Latchkey Demo', description: 'Sign in with a wallet, locally', url: location.origin, icons: [] },
    }),
    // Email and passkey sign-in through our backend (8787), keys in our kms (8090), frames on 8091.
    // "Continue with Google / Apple": locally the devnet's OpenID provider (8092) plays both.
    // "Send batch" runs through the EIP-7702 batch executor the devnet deployed (dev.json).
    embedded({
      appName: 'Latchkey Demo',
      backendUrl,
      oauthProviders: ['google', 'apple'],
      ...(import.meta.env.VITE_LATCHKEY_BATCH_EXECUTOR ? { batchExecutor: import.meta.env.VITE_LATCHKEY_BATCH_EXECUTOR } : {}),
    }),
  ],
  signIn: serverAdapter(backendUrl),
})
const explorer = /^\/explorer\/(\d+)\/address\/(0x[0-9a-fA-F]{40})$/.exec(location.pathname)

/** The provider with the demo's language choice (`?lang=`, then the header's select). */
function Root() {
  const [language, setLanguage] = useState(languageFromUrl)
  return (
    <LatchkeyProvider client={client} theme="auto" locale={language || undefined}>
      {explorer ? (
        <Explorer chainId={Number(explorer[1])} address={explorer[2] as `0x${string}`} />
      ) : location.pathname === '/oauth/callback' ? (
        <OAuthCallback />
      ) : location.pathname === '/headless' ? (
        <Headless />
      ) : (
        <App language={language} onLanguage={setLanguage} />
      )}
    </LatchkeyProvider>
  )
}

// (/oauth/callback has a page of its own, oauthCallback.ts, which loads this only after a redirect sign-in.)
createRoot(document.getElementById('root') as HTMLElement).render(
  <StrictMode>
    <Root />
  </StrictMode>,
)
