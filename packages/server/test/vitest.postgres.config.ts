import { fileURLToPath } from 'node:url'
import { defineConfig } from 'vitest/config'
import root from '../../../vitest.config.js'

/**
 * The backend's suite again, on PostgreSQL, with the shared database module's tests: the same
 * files as in the default run, with a throwaway PostgreSQL cluster (scripts/ensure-postgres.mjs
 * installs it when missing) and every store the tests open on a fresh database of it
 * (packages/service/test/testDatabase.ts), and the files that run on PostgreSQL only (*.postgres.ts).
 * `npm run test:server-postgres`.
 */
export default defineConfig({
  ...root,
  root: fileURLToPath(new URL('../../..', import.meta.url)),
  test: {
    ...root.test,
    include: [
      'packages/server/src/**/*.test.ts',
      'packages/server/test/**/*.test.ts',
      // PostgreSQL only: the previous release beside this one on one database.
      'packages/server/test/**/*.postgres.ts',
      'packages/service/test/database.test.ts',
      'packages/service/test/audit.test.ts',
    ],
    globalSetup: [...[root.test?.globalSetup ?? []].flat(), './packages/server/test/postgresSetup.ts'],
    // testDatabase.ts reads it.
    env: { ...root.test?.env, LATCHKEY_TEST_DATABASE: 'postgres' },
  },
})
