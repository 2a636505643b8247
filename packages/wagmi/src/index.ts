// Entry point of @latchkey/wagmi.
export { type EmbeddedParameters, type EmbeddedProperties, embedded } from './connectors/embedded.js'
export { type WalletConnectParameters, walletConnect } from './connectors/walletConnect.js'
export { SUPPORTED_WAGMI_MAJORS, UnsupportedWagmiVersionError, type UnsupportedWagmiVersionErrorType } from './errors.js'
export { LatchkeyWagmiProvider, type LatchkeyWagmiProviderProps } from './LatchkeyWagmiProvider.js'
