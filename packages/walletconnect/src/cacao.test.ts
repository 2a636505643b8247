import { expect, test } from 'vitest'

test('default: exports', async () => {
  expect(Object.keys(await import('./cacao.js')).sort()).toMatchInlineSnapshot(`
    [
      "chainsOfRecap",
      "createCacao",
      "createRecap",
      "decodeRecap",
      "encodeRecap",
      "formatAuthMessage",
      "methodsOfRecap",
      "parseDidPkh",
      "populateAuthPayload",
      "recapOf",
      "recapStatement",
    ]
  `)
})
