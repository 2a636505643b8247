/**
 * The English texts of <ConnectButton>, the only ones the page needs before a modal opens: they are
 * in the eager bundle; every other text is in the lazily loaded catalogues.
 */
export const buttonMessages = {
  connectWallet: 'Connect Wallet',
  signIn: 'Sign in',
  checkWallet: 'Check your wallet…',
  signingIn: 'Signing in…',
  signInAgain: 'Try signing in again',
  accountOf: 'Account {address}',
  chainOf: 'Chain {id}',
}

export type ButtonMessages = { readonly [K in keyof typeof buttonMessages]: string }
