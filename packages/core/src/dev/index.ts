// Entry point of @latchkey/core/dev: development-only tools, never part of the main bundle.
export { announceProvider, createDevWallet, type DevWallet, type DevWalletParameters, type DevWalletPrompt, devWalletInfo } from './devWallet.js'
