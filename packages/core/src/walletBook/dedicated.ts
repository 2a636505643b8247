/**
 * EIP-6963 rdns → the SPEC §9 excluded key of a wallet that has a dedicated connector.
 *
 * Kept apart from `wallets.json` so that the client can load it eagerly without pulling in the
 * whole wallet book. Every excluded wallet whose provider announces an rdns is listed; Eden Online
 * announces none, so it has no entry. `walletBook.test.ts` checks this map against the book.
 *
 * @example
 * const key = dedicatedWalletRdns['io.metamask'] // 'metamask'
 */
export const dedicatedWalletRdns = {
  'io.metamask': 'metamask',
  'com.coinbase.wallet': 'coinbase',
  'app.phantom': 'phantomevm',
  'com.exodus.web3-wallet': 'exodusevm',
  'xyz.abs.privy': 'abstract',
  'com.intersend.wallet': 'intersend',
} as const
