/** EIP-6963 rdns → the SPEC §9 excluded key of wallets with a dedicated connector. */
export const dedicatedWalletRdns = {
  'io.metamask': 'metamask',
  'com.coinbase.wallet': 'coinbase',
  'app.phantom': 'phantomevm',
  'com.exodus.web3-wallet': 'exodusevm',
} as const
