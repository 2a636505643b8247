import { expect, test } from 'vitest'

// The public names of @latchkey/embedded/popup, the import-free module an app's callback page loads.
test('default: exports', async () => {
  expect(Object.keys(await import('./popup.js')).sort()).toMatchInlineSnapshot(`
    [
      "OAUTH_WINDOW",
      "OAUTH_WINDOW_FEATURES",
      "openOAuthPopup",
      "postOAuthCallback",
      "readOAuthCallback",
    ]
  `)
})

test('default: imports nothing, so a callback page that uses it stays a few lines', async () => {
  const { readFile } = await import('node:fs/promises')
  const source = await readFile(new URL('./popup.ts', import.meta.url), 'utf8')
  expect(source.match(/^\s*(import|export .* from)\b.*$/gm) ?? []).toEqual([])
})
