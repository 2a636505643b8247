import { anvil, deployBatchExecutor, deployTestToken, getFreePort } from '@latchkey/devnet'
import { createRelay } from '@latchkey/relay'
import type { TestProject } from 'vitest/node'

declare module 'vitest' {
  export interface ProvidedContext {
    chainARpc: string
    chainBRpc: string
    /** A relay shared by tests that cannot start their own (happy-dom files, where Node's URL is replaced). */
    relayUrl: string
  }
}

/** Two real anvil chains (with the batch executor and the test token deployed) and one of our relays for the whole unit/integration run, on free ports. */
export default async function setup(project: TestProject) {
  const chainA = anvil({ port: await getFreePort(), chainId: 31337 })
  const chainB = anvil({ port: await getFreePort(), chainId: 31338 })
  await chainA.start()
  await chainB.start()
  // As `npm start` does: the EIP-7702 batch executor and the test token on both chains.
  for (const chain of [chainA, chainB]) {
    await deployBatchExecutor(chain.url)
    await deployTestToken(chain.url)
  }
  const relay = createRelay({ port: await getFreePort() })
  await relay.start()
  project.provide('chainARpc', chainA.url)
  project.provide('chainBRpc', chainB.url)
  project.provide('relayUrl', relay.url)
  return async () => {
    await relay.stop()
    await chainB.stop()
    await chainA.stop()
  }
}
