import { expect, test } from 'vitest'

test('default: exports of @latchkey/constants/erc7715', async () => {
  expect(Object.keys(await import('./erc7715.js')).sort()).toMatchInlineSnapshot(`
    [
      "GRANT_PERMISSION_TYPES",
      "GrantRequestProblem",
      "formatGrantDate",
      "readGrantRequest",
      "toGrantQuantity",
      "toKmsGrant",
    ]
  `)
})
