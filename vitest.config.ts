import react from '@vitejs/plugin-react'
import { defaultClientConditions, defaultServerConditions } from 'vite'
import { defineConfig } from 'vitest/config'

// Without vite's `module` condition on the server: Node loads what tests import outside vite, and
// some packages (@opentelemetry/api) map `module` to a build that only a bundler can load.
const serverResolve = { conditions: ['source', ...defaultServerConditions.filter((condition) => condition !== 'module')], externalConditions: ['source'] }

/** Unit and integration tests of every package; e2e has its own config in e2e/. */
export default defineConfig({
  plugins: [react()],
  // Workspace packages resolve to their TypeScript source through the `source` export condition.
  resolve: { conditions: ['source', ...defaultClientConditions] },
  ssr: { resolve: serverResolve },
  // Vitest loads global setup files in its own environment, which needs the condition too.
  environments: { __vitest__: { resolve: serverResolve } },
  test: {
    include: [
      'packages/*/src/**/*.test.{ts,tsx}',
      'packages/*/test/**/*.test.{ts,tsx}',
      'apps/*/src/**/*.test.{ts,tsx}',
      'test/*.test.ts',
      'contracts/*.test.ts',
    ],
    globalSetup: ['./test/globalSetup.ts'],
    // A kms created without storage options would follow a DATABASE_URL from the shell into a shared database.
    env: { DATABASE_URL: '' },
    testTimeout: 30_000,
    hookTimeout: 60_000,
  },
})
