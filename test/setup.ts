import { createClient, createMemoryStorage, injected, type Logger, type SignInAdapter } from '@latchkey/core'
import { createDevWallet, type DevWalletPrompt } from '@latchkey/core/dev'
import type { Hex } from 'viem'
import { testChains } from './chains.js'

/** A logger that records what it is told, so tests can assert warning versus error. */
export function createRecordingLogger(): Logger & { warnings: string[]; errors: string[] } {
  const warnings: string[] = []
  const errors: string[] = []
  return { warnings, errors, warn: (message) => void warnings.push(message), error: (message) => void errors.push(message) }
}

/**
 * A client with one injected connector over a real dev wallet on the anvil chains. `decide`
 * answers the wallet's prompts (default: approve), so a test can reject or hold a request.
 */
export function setupClient(parameters: { privateKey: Hex; decide?: (prompt: DevWalletPrompt) => Promise<boolean>; signIn?: SignInAdapter }) {
  const chains = testChains()
  const prompts: DevWalletPrompt[] = []
  const wallet = createDevWallet({
    privateKey: parameters.privateKey,
    chains,
    approve: async (prompt) => {
      prompts.push(prompt)
      return parameters.decide ? parameters.decide(prompt) : true
    },
  })
  const storage = createMemoryStorage()
  const logger = createRecordingLogger()
  const client = createClient({
    chains,
    connectors: [injected({ id: 'dev', name: 'Dev Wallet', provider: wallet })],
    storage,
    logger,
    signIn: parameters.signIn,
  })
  return { client, wallet, storage, logger, prompts, chains }
}
