import { expect, test } from 'vitest'

test('default: exports of @latchkey/constants/batch-executor', async () => {
  expect(Object.keys(await import('./batchExecutor.js')).sort()).toMatchInlineSnapshot(`
    [
      "BATCH_CALLS_PARAMETERS",
      "BATCH_EXECUTOR_ABI",
      "BATCH_MODE",
    ]
  `)
})
