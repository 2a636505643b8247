import { defineConfig } from 'vitest/config'

/**
 * `npm run test:packages`: the packed tarballs as npm would publish them. No `source` condition:
 * everything here runs the built code.
 */
export default defineConfig({
  test: {
    include: ['test/packages/**/*.test.ts'],
    // Building every package once (the declarations run the TypeScript checker) takes a minute or two on two cores.
    hookTimeout: 600_000,
    testTimeout: 120_000,
    // The checks only read the unpacked tarballs; the slow ones (attw, a kms under plain Node) overlap.
    sequence: { concurrent: true },
  },
})
