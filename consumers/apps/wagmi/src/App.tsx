import { serverAdapter } from '@latchkey/core'
import { ConnectButton, useSignIn } from '@latchkey/react'
import '@latchkey/react/styles.css'
import { embedded, LatchkeyWagmiProvider, walletConnect } from '@latchkey/wagmi'
import { QueryClient, QueryClientProvider } from '@tanstack/react-query'
import { BrowserProvider, type Eip1193Provider, parseEther as ethersParseEther } from 'ethers'
import { useEffect, useState } from 'react'
import { parseEther } from 'viem'
import {
  createConfig,
  http,
  useAccount,
  useConnect,
  useConnectors,
  useDisconnect,
  useSendTransaction,
  useSignMessage,
  useSignTypedData,
  useSwitchChain,
  WagmiProvider,
} from 'wagmi'
import { chainA, chainB } from './devChains'

// Browser wallets come from wagmi's EIP-6963 discovery; Latchkey adds its WalletConnect and embedded wallet.
const config = createConfig({
  chains: [chainA, chainB],
  connectors: [
    walletConnect({ relayUrl: import.meta.env.VITE_RELAY_URL }),
    embedded({ appName: 'Wagmi consumer', backendUrl: import.meta.env.VITE_BACKEND_URL }),
  ],
  transports: { [chainA.id]: http(), [chainB.id]: http() },
})
const queryClient = new QueryClient()
// Sign-In with Ethereum at the app backend, on top of wagmi.
const signIn = serverAdapter(import.meta.env.VITE_BACKEND_URL)
// `?requireSignIn`: the ConnectButton connects and signs in (one click with WalletConnect).
const requireSignIn = new URLSearchParams(location.search).has('requireSignIn')

/** Where the test's transfers go (anvil's account #9). */
export const recipient = '0xa0Ee7A142d267C1f36714E4a8F75612F20a79720'
const typedData = {
  domain: { name: 'Consumer', version: '1', chainId: 31337 },
  types: { Note: [{ name: 'text', type: 'string' }] },
  primaryType: 'Note',
  message: { text: 'gm' },
} as const

function Wagmi() {
  const account = useAccount()
  const connectors = useConnectors()
  const { connect } = useConnect()
  const { disconnect } = useDisconnect()
  const { switchChain } = useSwitchChain()
  const message = useSignMessage()
  const typed = useSignTypedData()
  const transaction = useSendTransaction()
  const [ethers, setEthers] = useState<string>()
  const session = useSignIn()
  // The pairing URI, as wagmi's own WalletConnect connector sends it.
  const [uri, setUri] = useState<string>()
  useEffect(() => {
    const onMessage = ({ type, data }: { type: string; data?: unknown }) => {
      if (type === 'display_uri') setUri(data as string)
    }
    for (const connector of connectors) connector.emitter.on('message', onMessage)
    return () => {
      for (const connector of connectors) connector.emitter.off('message', onMessage)
    }
  }, [connectors])

  async function viaEthers() {
    // ethers v6 over the connector's EIP-1193 provider, beside wagmi.
    const provider = new BrowserProvider((await account.connector!.getProvider()) as Eip1193Provider)
    const signer = await provider.getSigner()
    const signature = await signer.signMessage('ethers gm')
    const sent = await signer.sendTransaction({ to: recipient, value: ethersParseEther('0.001') })
    setEthers(`${signature} ${sent.hash}`)
  }

  return (
    <section>
      <p data-testid="wagmi account">{`${account.status} ${account.address ?? '-'} ${account.isConnected ? account.chainId : '-'}`}</p>
      {connectors.map((connector) => (
        <button key={connector.uid} type="button" onClick={() => connect({ connector })}>
          wagmi connect {connector.name}
        </button>
      ))}
      <button type="button" onClick={() => message.signMessage({ message: 'gm' })}>
        wagmi sign message
      </button>
      <button type="button" onClick={() => typed.signTypedData(typedData)}>
        wagmi sign typed data
      </button>
      <button type="button" onClick={() => transaction.sendTransaction({ to: recipient, value: parseEther('0.001') })}>
        wagmi send transaction
      </button>
      <button type="button" onClick={() => switchChain({ chainId: account.chainId === chainA.id ? chainB.id : chainA.id })}>
        wagmi switch chain
      </button>
      <button type="button" onClick={() => disconnect()}>
        wagmi disconnect
      </button>
      <button type="button" onClick={() => viaEthers().catch((error: Error) => setEthers(`error ${error.message}`))}>
        ethers sign and send
      </button>
      <button type="button" onClick={() => void session.signIn().catch(() => {})}>
        latchkey sign in
      </button>
      <p data-testid="pairing uri">{uri ?? '-'}</p>
      <p data-testid="sign-in">{`${session.status} ${session.session?.address ?? '-'}`}</p>
      <p data-testid="message signature">{message.data ?? message.error?.message ?? '-'}</p>
      <p data-testid="typed data signature">{typed.data ?? typed.error?.message ?? '-'}</p>
      <p data-testid="transaction hash">{transaction.data ?? transaction.error?.message ?? '-'}</p>
      <p data-testid="ethers result">{ethers ?? '-'}</p>
    </section>
  )
}

export const App = () => (
  <WagmiProvider config={config}>
    <QueryClientProvider client={queryClient}>
      <LatchkeyWagmiProvider signIn={signIn}>
        <ConnectButton requireSignIn={requireSignIn} />
        <Wagmi />
      </LatchkeyWagmiProvider>
    </QueryClientProvider>
  </WagmiProvider>
)
