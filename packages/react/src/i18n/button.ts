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

/** `format('Open {name}', { name: 'Rainbow' })` → `Open Rainbow`; a missing parameter stays as written. */
export function format(template: string, params?: Readonly<Record<string, string | number>>): string {
  return params ? template.replace(/\{(\w+)\}/g, (whole, name: string) => (name in params ? String(params[name]) : whole)) : template
}
