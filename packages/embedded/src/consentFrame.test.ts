import { expect, test } from 'vitest'

// The public names of @latchkey/embedded/consent-frame: the mount alone, a subpath of its own so
// that importing the wallet leaves the frame's module out until the wallet first needs it.
test('default: exports', async () => {
  expect(Object.keys(await import('./consentFrame.js')).sort()).toMatchInlineSnapshot(`
    [
      "mountConsentFrame",
    ]
  `)
})
