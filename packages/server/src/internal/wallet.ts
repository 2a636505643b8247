/** What a new user's wallet is called (SPEC §9). */
export const WALLET_NAME = 'Turnkey HD'
/** The wallet's first account: Ethereum at m/44'/60'/0'/0/0. */
export const ETHEREUM_ACCOUNT = {
  curve: 'CURVE_SECP256K1',
  pathFormat: 'PATH_FORMAT_BIP32',
  path: "m/44'/60'/0'/0/0",
  addressFormat: 'ADDRESS_FORMAT_ETHEREUM',
} as const
