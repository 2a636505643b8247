// @vitest-environment happy-dom

import { connect, createClient, createMemoryStorage, injected } from '@latchkey/core'
import { createDevWallet } from '@latchkey/core/dev'
import { act, render, screen, waitFor } from '@testing-library/react'
import userEvent from '@testing-library/user-event'
import { privateKeyToAddress } from 'viem/accounts'
import { expect, test } from 'vitest'
import { anvilKeys, testChains } from '../../../test/chains.js'
import { createRecordingLogger } from '../../../test/setup.js'
import { verifyingAdapter } from '../../../test/siwe.js'
import { ConnectButton } from './ConnectButton.js'
import { useSession } from './hooks/useSignIn.js'
import { LatchkeyProvider } from './LatchkeyProvider.js'

const address = privateKeyToAddress(anvilKeys[4])

function Session() {
  const { status, session } = useSession()
  return (
    <p>
      <output aria-label="Sign-in">{status}</output> <output aria-label="Session">{session?.address ?? ''}</output>
    </p>
  )
}

test('behavior: ConnectButton requireSignIn asks to sign in once connected; signing in and out follow', async () => {
  let allow = false
  const wallet = createDevWallet({ privateKey: anvilKeys[4], chains: testChains(), approve: async (prompt) => prompt.method !== 'personal_sign' || allow })
  const { adapter } = verifyingAdapter(location.host)
  const client = createClient({
    chains: testChains(),
    storage: createMemoryStorage(),
    logger: createRecordingLogger(),
    window: new EventTarget(),
    connectors: [injected({ id: 'dev', name: 'Dev Wallet', provider: wallet })],
    signIn: adapter,
  })
  render(
    <LatchkeyProvider client={client}>
      <ConnectButton requireSignIn />
      <Session />
    </LatchkeyProvider>,
  )
  await act(() => connect(client, { connector: 'dev' }))
  const user = userEvent.setup()
  // A dismissed prompt: the button offers to try again.
  await user.click(screen.getByRole('button', { name: 'Sign in' }))
  await screen.findByRole('button', { name: 'Try signing in again' })
  expect(screen.getByRole('status', { name: 'Sign-in' }).textContent).toBe('error')
  allow = true
  await user.click(screen.getByRole('button', { name: 'Try signing in again' }))
  await waitFor(() => expect(screen.getByRole('status', { name: 'Session' }).textContent).toBe(address))
  expect(screen.queryByRole('button', { name: /Sign in/ })).toBeNull()
  // Disconnect ends the session.
  await act(() => client._internal.clearConnection())
  expect(screen.getByRole('status', { name: 'Session' }).textContent).toBe('')
})
