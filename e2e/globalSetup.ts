import { getFreePort, startStack } from '@latchkey/devnet'
import type { TestProject } from 'vitest/node'

declare module 'vitest' {
  export interface ProvidedContext {
    stack: {
      demo: string
      wallet: string
      chainA: string
      chainB: string
      relay: string
      kms: string
      frames: string
      server: string
      /** The paymaster that takes gas in TKN (dev.json's `contracts.tokenPaymaster`). */
      tokenPaymaster: `0x${string}`
    }
  }
}

/** Starts the whole local stack through the same code as `npm start`, on free ports. */
export default async function setup(project: TestProject) {
  const stack = await startStack({
    ports: {
      chainA: await getFreePort(),
      chainB: await getFreePort(),
      relay: await getFreePort(),
      kms: await getFreePort(),
      frames: await getFreePort(),
      server: await getFreePort(),
      demo: await getFreePort(),
      wallet: await getFreePort(),
      oidc: await getFreePort(),
      bundlerA: await getFreePort(),
      bundlerB: await getFreePort(),
    },
    stateDir: `${import.meta.dirname}/.artifacts/state`,
  })
  project.provide('stack', {
    demo: stack.urls.demo,
    wallet: stack.urls.wallet!,
    chainA: stack.urls.chainA,
    chainB: stack.urls.chainB,
    relay: stack.urls.relay!,
    kms: stack.urls.kms!,
    frames: stack.urls.frames!,
    server: stack.urls.server!,
    tokenPaymaster: stack.contracts.tokenPaymaster,
  })
  return () => stack.stop()
}
