import { InvalidCodeError, UserRejectedRequestError } from '@latchkey/core'
import { useAccount, useDisconnect, useEmailSignIn, useSignMessage } from '@latchkey/react'
import { type FormEvent, useId, useState } from 'react'
import { TEST_ACCOUNT } from './testToken.js'
import { describeBalance, useTestToken } from './useTestToken.js'

// The embedded wallet with an app's own UI: no ConnectButton, no modal, only the hooks. Plain
// markup on purpose: what an app writes when it wants its own look.

export function Headless() {
  const { address, isConnected } = useAccount()
  const emailSignIn = useEmailSignIn()
  const signMessage = useSignMessage()
  const disconnect = useDisconnect()
  const token = useTestToken()
  const [email, setEmail] = useState('')
  const [problem, setProblem] = useState<string>()
  const ids = { email: useId(), address: useId(), signature: useId(), balance: useId(), tokenStatus: useId() }

  async function attempt(work: () => Promise<unknown>) {
    setProblem(undefined)
    try {
      await work()
    } catch (error) {
      // The hooks' errors are classes: a wrong code asks for the code again, a rejection in the
      // wallet is the user's choice, anything else is shown.
      if (error instanceof InvalidCodeError) setProblem('That code did not work. Check the email and try again.')
      else if (error instanceof UserRejectedRequestError) setProblem(`You rejected the request in your wallet (${UserRejectedRequestError.code}).`)
      else setProblem(error instanceof Error ? error.message.split('\n')[0] : String(error))
    }
  }

  // The code is typed in the wallet's secure window (the consent frame), which verify opens.
  const onEmail = (event: FormEvent) => {
    event.preventDefault()
    void attempt(async () => (await emailSignIn.start(email), await emailSignIn.verify()))
  }
  const onCode = (event: FormEvent) => {
    event.preventDefault()
    void attempt(() => emailSignIn.verify())
  }

  return (
    <main className="headless">
      <h1>Headless sign-in</h1>
      <p>This page uses Latchkey's hooks with its own markup: no modal.</p>
      {isConnected && address ? (
        <section aria-label="Signed in">
          <p>
            <label htmlFor={ids.address}>Address</label>{' '}
            <output id={ids.address} aria-label="Address">
              {address}
            </output>
          </p>
          <button type="button" onClick={() => void attempt(() => signMessage.signMessage({ message: 'Hello from a headless page' }))}>
            Sign "Hello from a headless page"
          </button>
          <p>
            <label htmlFor={ids.signature}>Signature</label>{' '}
            <output id={ids.signature} aria-label="Signature">
              {signMessage.data ?? ''}
            </output>
          </p>
          <h2>Test Token</h2>
          <p>
            <label htmlFor={ids.balance}>Token balance</label>{' '}
            <output id={ids.balance} aria-label="Token balance">
              {describeBalance(token.balance)}
            </output>
          </p>
          <p>Sends and approvals go to the test account {TEST_ACCOUNT}.</p>
          <button type="button" onClick={() => void attempt(token.mint)}>
            Get test tokens
          </button>
          <button type="button" onClick={() => void attempt(token.send)}>
            Send tokens
          </button>
          <button type="button" onClick={() => void attempt(token.approveUnlimited)}>
            Approve unlimited
          </button>
          <button type="button" onClick={() => void attempt(token.grantPermission)}>
            Grant permission
          </button>
          <p>
            <label htmlFor={ids.tokenStatus}>Token status</label>{' '}
            <output id={ids.tokenStatus} aria-label="Token status">
              {token.status}
            </output>
          </p>
          <button type="button" onClick={() => void attempt(() => disconnect.disconnect())}>
            Sign out
          </button>
        </section>
      ) : emailSignIn.email === undefined ? (
        <form onSubmit={onEmail}>
          <label htmlFor={ids.email}>Email</label>
          <input id={ids.email} type="email" required value={email} onChange={(event) => setEmail(event.target.value)} />
          <button type="submit" disabled={emailSignIn.sending.isPending}>
            {emailSignIn.sending.isPending ? 'Sending…' : 'Email me a code'}
          </button>
        </form>
      ) : (
        <form onSubmit={onCode}>
          <p role="status">Code sent to {emailSignIn.email}. Type it in the secure window.</p>
          <button type="submit" disabled={emailSignIn.verifying.isPending}>
            {emailSignIn.verifying.isPending ? 'Waiting for the code…' : 'Enter the code'}
          </button>
          <button type="button" onClick={() => void attempt(async () => (await emailSignIn.resend(), await emailSignIn.verify()))}>
            Send another code
          </button>
        </form>
      )}
      {problem && <p role="alert">{problem}</p>}
    </main>
  )
}
