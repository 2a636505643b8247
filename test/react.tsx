import { createClient, createMemoryStorage, injected } from '@latchkey/core'
import { createDevWallet, type DevWalletPrompt } from '@latchkey/core/dev'
import { LatchkeyProvider, type LatchkeyProviderProps } from '@latchkey/react'
import { render } from '@testing-library/react'
import type { ReactNode } from 'react'
import { anvilKeys, testChains } from './chains.js'
import { createRecordingLogger } from './setup.js'

/**
 * Renders `ui` inside a provider over a real client and a real dev wallet on anvil. `decide`
 * answers the wallet's prompts; a test can hold one open by returning a pending promise.
 */
export function renderWithClient(
  ui: ReactNode,
  options: {
    decide?: (prompt: DevWalletPrompt) => Promise<boolean>
    storage?: ReturnType<typeof createMemoryStorage>
    theme?: LatchkeyProviderProps['theme']
  } = {},
) {
  const chains = testChains()
  const wallet = createDevWallet({ privateKey: anvilKeys[0], chains, approve: (prompt) => options.decide?.(prompt) ?? Promise.resolve(true) })
  const storage = options.storage ?? createMemoryStorage()
  const client = createClient({
    chains,
    storage,
    logger: createRecordingLogger(),
    window: new EventTarget(),
    connectors: [injected({ id: 'dev', name: 'Dev Wallet', provider: wallet }), injected({ id: 'other', name: 'Other Wallet', provider: wallet })],
  })
  const result = render(
    <LatchkeyProvider client={client} theme={options.theme}>
      {ui}
    </LatchkeyProvider>,
  )
  return { ...result, client, wallet, storage, chains }
}
