import { defaultClientConditions, defaultServerConditions } from 'vite'
import { defineConfig } from 'vitest/config'

// Without vite's `module` condition on the server (see the root vitest.config.ts).
const serverResolve = { conditions: ['source', ...defaultServerConditions.filter((condition) => condition !== 'module')], externalConditions: ['source'] }

/** End-to-end tests: the real stack (anvil chains + built demo) and Debian's Chromium. */
export default defineConfig({
  resolve: { conditions: ['source', ...defaultClientConditions] },
  ssr: { resolve: serverResolve },
  environments: { __vitest__: { resolve: serverResolve } },
  test: {
    root: import.meta.dirname,
    include: ['**/*.e2e.ts'],
    globalSetup: ['./globalSetup.ts'],
    testTimeout: 90_000,
    hookTimeout: 180_000,
    // One browser at a time on a 2-core machine; files share the stack's chains.
    fileParallelism: false,
  },
})
