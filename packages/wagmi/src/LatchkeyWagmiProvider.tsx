'use client'
import type { SignInAdapter } from '@latchkey/core'
import { LatchkeyProvider } from '@latchkey/react'
import { type ReactNode, useMemo } from 'react'
import { useConfig } from 'wagmi'
import { assertWagmiVersion } from './internal/assertWagmiVersion.js'
import { createWagmiClient } from './internal/createWagmiClient.js'

export type LatchkeyWagmiProviderProps = {
  /** Sign-In with Ethereum against the app's backend: `serverAdapter(url)` or your own adapter. */
  signIn?: SignInAdapter | undefined
  /** Colour scheme of the modals. Default `auto` (follows the system). */
  theme?: 'light' | 'dark' | 'auto' | undefined
  children?: ReactNode
}

/**
 * Runs Latchkey's ConnectButton, connect modal and account modal, and its hooks, on the app's
 * wagmi config (from the enclosing `<WagmiProvider>`). wagmi is the one source of truth: a wallet
 * connected in the modal is wagmi's connection, and whatever wagmi does (disconnect, switchChain,
 * an account change) shows in the modal at once.
 *
 * @example
 * <WagmiProvider config={config}>
 *   <QueryClientProvider client={queryClient}>
 *     <LatchkeyWagmiProvider><ConnectButton /></LatchkeyWagmiProvider>
 *   </QueryClientProvider>
 * </WagmiProvider>
 */
export function LatchkeyWagmiProvider({ signIn, theme, children }: LatchkeyWagmiProviderProps) {
  assertWagmiVersion()
  const config = useConfig()
  const client = useMemo(() => createWagmiClient(config, { signIn }), [config, signIn])
  return (
    <LatchkeyProvider client={client} theme={theme}>
      {children}
    </LatchkeyProvider>
  )
}
