import { fileURLToPath } from 'node:url'
import { defineConfig } from 'vitest/config'
import root from '../../../vitest.config.js'

/**
 * The kms suite again, on PostgreSQL: the same files as in the default run, with a throwaway
 * PostgreSQL cluster (scripts/ensure-postgres.mjs installs it when missing) and every kms the
 * tests create on a fresh database of it (database.ts). `npm run test:kms-postgres`.
 */
export default defineConfig({
  ...root,
  root: fileURLToPath(new URL('../../..', import.meta.url)),
  test: {
    ...root.test,
    include: ['packages/kms/src/**/*.test.ts', 'packages/kms/test/**/*.test.ts', 'packages/kms/test/**/*.postgres.ts'],
    globalSetup: [...[root.test?.globalSetup ?? []].flat(), './packages/kms/test/postgresSetup.ts'],
    // database.ts reads it.
    env: { ...root.test?.env, LATCHKEY_KMS_TEST_DATABASE: 'postgres' },
  },
})
