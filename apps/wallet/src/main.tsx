import { StrictMode } from 'react'
import { createRoot } from 'react-dom/client'
import { Wallet } from './Wallet.js'
import { createWallet } from './wallet.js'
import './wallet.css'

// Anvil's test key #1: funded on every local chain, and not the dev wallet's key #0, so the demo
// can tell the two wallets apart; #3 is the second account to switch to.
const privateKey = '0x59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d'
const secondKey = '0x7c852118294e51e653712a81e05800f419141751be58f605c371e15141b007a6'

// A deep link opens `/?uri=wc:…` (or `/wc?uri=…`). The URI is taken out of the address bar so a
// reload does not pair again with a pairing already used.
const params = new URLSearchParams(location.search)
const initialUri = params.get('uri') ?? undefined
if (initialUri) history.replaceState(null, '', location.pathname === '/wc' ? '/' : location.pathname)

const wallet = await createWallet({
  relayUrl: import.meta.env.VITE_LATCHKEY_RELAY_URL ?? 'ws://127.0.0.1:5555',
  chains: [
    { id: 31337, name: 'Anvil A', rpcUrl: import.meta.env.VITE_LATCHKEY_CHAIN_A_RPC ?? 'http://127.0.0.1:8545' },
    { id: 31338, name: 'Anvil B', rpcUrl: import.meta.env.VITE_LATCHKEY_CHAIN_B_RPC ?? 'http://127.0.0.1:8546' },
  ],
  privateKey,
  otherKeys: [secondKey],
  storage: localStorage,
})

createRoot(document.getElementById('root') as HTMLElement).render(
  <StrictMode>
    <Wallet wallet={wallet} initialUri={initialUri} />
  </StrictMode>,
)
