import type { Page } from 'playwright-core'

/**
 * A virtual platform authenticator in `page`'s browser that says yes by itself (Chromium's CDP
 * WebAuthn domain); `credentials()` lists the passkeys it stores.
 *
 * @example
 * const authenticator = await addPasskeyAuthenticator(page)
 * expect(await authenticator.credentials()).toHaveLength(1)
 */
export async function addPasskeyAuthenticator(page: Page) {
  const cdp = await page.context().newCDPSession(page)
  await cdp.send('WebAuthn.enable')
  const { authenticatorId } = await cdp.send('WebAuthn.addVirtualAuthenticator', {
    options: {
      protocol: 'ctap2',
      transport: 'internal',
      hasResidentKey: true,
      hasUserVerification: true,
      isUserVerified: true,
      automaticPresenceSimulation: true,
    },
  })
  return { credentials: async () => (await cdp.send('WebAuthn.getCredentials', { authenticatorId })).credentials }
}
