import { createClient } from '@latchkey/core'
import { ConnectButton, LatchkeyProvider, useAccount, useSignMessage } from '@latchkey/react'
import { devChain } from './devChain'

const client = createClient({ chains: [devChain] }) // wallets are discovered through EIP-6963

function Profile() {
  const { address, isConnected } = useAccount()
  const { signMessage, data: signature, error } = useSignMessage()
  if (!isConnected) return null
  return (
    <>
      <p>{address}</p>
      {/* A refusal shows in `error`; catching keeps it from becoming an unhandled rejection. */}
      <button type="button" onClick={() => signMessage({ message: 'gm' }).catch(() => {})}>
        Sign
      </button>
      {signature && <p>Signed: {signature}</p>}
      {error && <p role="alert">{error.shortMessage}</p>}
    </>
  )
}

export const App = () => (
  <LatchkeyProvider client={client}>
    <ConnectButton />
    <Profile />
  </LatchkeyProvider>
)
