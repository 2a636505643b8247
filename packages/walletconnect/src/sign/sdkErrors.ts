/** Error objects the protocol sends, with the official codes. */
export const SdkErrors = {
  userRejected: { code: 5000, message: 'User rejected.' },
  unsupportedChains: { code: 5100, message: 'Unsupported chains.' },
  unauthorizedMethod: { code: 3001, message: 'Unauthorized method.' },
  unauthorizedEvent: { code: 3002, message: 'Unauthorized event.' },
  unauthorizedUpdate: { code: 3003, message: 'Unauthorized update request.' },
  userDisconnected: { code: 6000, message: 'User disconnected.' },
  invalidSettle: { code: 1005, message: 'Invalid session settle request.' },
  invalidUpdate: { code: 1003, message: 'Invalid update request.' },
  noMatchingKey: { code: 2, message: 'No matching key.' },
  expired: { code: 6, message: 'Expired.' },
  methodUnsupported: { code: 10001, message: 'Unsupported wc_ method.' },
} as const
