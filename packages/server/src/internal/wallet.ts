import { WALLET_NAMES } from '@latchkey/constants'

/** What a new user's wallet is called: the HD wallet of SPEC §9's wallet names. */
export const WALLET_NAME = WALLET_NAMES[1]
/** The wallet's first account: Ethereum at m/44'/60'/0'/0/0. */
export const ETHEREUM_ACCOUNT = {
  curve: 'CURVE_SECP256K1',
  pathFormat: 'PATH_FORMAT_BIP32',
  path: "m/44'/60'/0'/0/0",
  addressFormat: 'ADDRESS_FORMAT_ETHEREUM',
} as const
