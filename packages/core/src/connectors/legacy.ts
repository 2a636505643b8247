/**
 * Names for the legacy `window.ethereum` fallback, by the flags wallets set on it. Order matters:
 * several wallets also set `isMetaMask` for compatibility, so the specific flags come first.
 */
const legacyNames = [
  ['isRabby', 'Rabby'],
  ['isBraveWallet', 'Brave Wallet'],
  ['isCoinbaseWallet', 'Coinbase Wallet'],
  ['isTrust', 'Trust Wallet'],
  ['isOkxWallet', 'OKX Wallet'],
  ['isZerion', 'Zerion'],
  ['isPhantom', 'Phantom'],
  ['isFrame', 'Frame'],
  ['isMetaMask', 'MetaMask'],
] as const

/** The display name of a legacy injected provider. */
export function legacyWalletName(provider: object): string {
  const flags = provider as Record<string, unknown>
  return legacyNames.find(([flag]) => flags[flag] === true)?.[1] ?? 'Browser Wallet'
}
