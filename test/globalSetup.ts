import type { TestProject } from 'vitest/node'
import { anvil, getFreePort } from '@latchkey/devnet'

declare module 'vitest' {
  export interface ProvidedContext {
    chainARpc: string
    chainBRpc: string
  }
}

/** Two real anvil chains for the whole unit/integration run, on free ports. */
export default async function setup(project: TestProject) {
  const chainA = anvil({ port: await getFreePort(), chainId: 31337 })
  const chainB = anvil({ port: await getFreePort(), chainId: 31338 })
  await chainA.start()
  await chainB.start()
  project.provide('chainARpc', chainA.url)
  project.provide('chainBRpc', chainB.url)
  return async () => {
    await chainB.stop()
    await chainA.stop()
  }
}
