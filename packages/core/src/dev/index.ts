// Entry point of @latchkey/core/dev: development-only tools, never part of the main bundle.
export { announceProvider, createDevWallet, type DevWallet, type DevWalletParameters, type DevWalletPrompt, devWalletInfo } from './devWallet.js'
export {
  createWalletCalls,
  type RpcReceipt,
  type WalletCall,
  type WalletCalls,
  type WalletCallsBatch,
  WalletCallsError,
  type WalletCallsOptions,
  type WalletCallsStatus,
} from './walletCalls.js'
