'use client'
import type { GetAccountReturnType } from '@latchkey/core'
import { lazy, type ReactNode, Suspense } from 'react'
import type { Chain } from 'viem'
import { useAccount } from './hooks/useAccount.js'
import { useClient, useLatchkeyContext } from './hooks/useClient.js'
import { useAccountModal, useConnectModal } from './hooks/useModal.js'
import { useSignIn } from './hooks/useSignIn.js'
import { type ButtonMessages, buttonMessages } from './i18n/button.js'
import { loadAccountModal, loadConnectModal } from './ModalHost.js'
import '#button.css'

export type ConnectButtonRenderProps = {
  account: GetAccountReturnType
  chain: Chain | undefined
  status: GetAccountReturnType['status']
  isConnected: boolean
  openConnectModal(): void
  openAccountModal(): void
  /** Sign-in state, when the client has a sign-in adapter. */
  signIn: ReturnType<typeof useSignIn>
}

export type ConnectButtonProps = {
  label?: string | undefined
  /**
   * Connected is not signed in: show "Sign in" until the wallet has signed the sign-in message.
   * With WalletConnect, connecting signs in too, in one approval where the wallet can. Needs
   * `signIn` on the client.
   */
  requireSignIn?: boolean | undefined
  /** Render your own button; Latchkey still provides the state and the modals. */
  children?: ((props: ConnectButtonRenderProps) => ReactNode) | undefined
}

/** `0xf39F…2266` */
export function shortAddress(address: string) {
  return `${address.slice(0, 6)}…${address.slice(-4)}`
}

// The ENS name and avatar, on a chain with ENS only: their code is never in the page.
const EnsLabel = lazy(() => import('./ens/EnsLabel.js'))

// Warm the modal's chunk when the user shows intent, so the first click opens at once.
const preloadConnect = () => void loadConnectModal()
const preloadAccount = () => void loadAccountModal()

/**
 * The button that opens the connect modal, or, once connected, the account modal.
 *
 * @example
 * <ConnectButton />
 * <ConnectButton>{({ isConnected, openConnectModal }) => <MyButton onClick={openConnectModal} />}</ConnectButton>
 */
export function ConnectButton({ label, requireSignIn = false, children }: ConnectButtonProps) {
  const account = useAccount()
  const connectModal = useConnectModal()
  const accountModal = useAccountModal()
  const signIn = useSignIn()
  const client = useClient()
  const { openModal, catalogue, overrides, themeVariables } = useLatchkeyContext()
  const text: ButtonMessages = { ...buttonMessages, ...catalogue, ...overrides }
  const openConnect = requireSignIn && client.auth ? () => openModal('connectAndSignIn') : connectModal.open
  if (children)
    return children({
      account,
      chain: account.chain,
      status: account.status,
      isConnected: account.isConnected,
      openConnectModal: openConnect,
      openAccountModal: accountModal.open,
      signIn,
    })
  if (account.isConnected && account.address) {
    const address = shortAddress(account.address)
    // requireSignIn: "Sign in" beside the account until the wallet has signed.
    const signInFirst = requireSignIn && signIn.status !== 'signedIn'
    const accountButton = (
      <button
        type="button"
        className="lk-button lk-button-account"
        style={themeVariables}
        // Each button text has at most one parameter: filled here, so format() stays with the modals.
        aria-label={text.accountOf.replace('{address}', address)}
        onClick={accountModal.open}
        onPointerEnter={preloadAccount}
        onFocus={preloadAccount}
      >
        {!signInFirst && <span className="lk-button-chain">{account.chain?.name ?? text.chainOf.replace('{id}', `${account.chainId ?? ''}`)}</span>}
        <span className="lk-button-address">
          {account.chain?.contracts?.ensUniversalResolver ? (
            <Suspense fallback={address}>
              <EnsLabel address={account.address} chainId={account.chain.id} fallback={address} />
            </Suspense>
          ) : (
            address
          )}
        </span>
      </button>
    )
    if (!signInFirst) return accountButton
    const signInLabels: Partial<Record<string, string>> = { signing: text.checkWallet, verifying: text.signingIn, error: text.signInAgain }
    return (
      <span className="lk-button-group">
        <button type="button" className="lk-button" style={themeVariables} disabled={signIn.isPending} onClick={() => void signIn.signIn().catch(() => {})}>
          {signInLabels[signIn.status] ?? text.signIn}
        </button>
        {accountButton}
      </span>
    )
  }
  return (
    <button type="button" className="lk-button" style={themeVariables} onClick={openConnect} onPointerEnter={preloadConnect} onFocus={preloadConnect}>
      {label ?? text.connectWallet}
    </button>
  )
}
