import { defaultClientConditions, defaultServerConditions } from 'vite'
import { defineConfig } from 'vitest/config'

// The test process itself uses the workspace (anvil from @latchkey/devnet, viem); the apps under test never do.
// Without vite's `module` condition on the server (see the root vitest.config.ts).
const serverResolve = { conditions: ['source', ...defaultServerConditions.filter((condition) => condition !== 'module')], externalConditions: ['source'] }

/** Consumer apps outside the monorepo, on the packed packages (see README.md). */
export default defineConfig({
  resolve: { conditions: ['source', ...defaultClientConditions] },
  ssr: { resolve: serverResolve },
  environments: { __vitest__: { resolve: serverResolve } },
  test: {
    root: import.meta.dirname,
    include: ['*.test.ts'],
    globalSetup: ['./harness/globalSetup.ts'],
    testTimeout: 300_000,
    hookTimeout: 120_000,
    // The files wait on different things (the native build, next build, tsc): run them side by side.
    maxWorkers: 4,
  },
})
