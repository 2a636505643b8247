import type { Page } from 'playwright-core'

/** A passkey as the virtual authenticator stores it (CDP WebAuthn.Credential). */
export type VirtualCredential = {
  credentialId: string
  isResidentCredential: boolean
  rpId?: string
  privateKey: string
  userHandle?: string
  signCount: number
}

/**
 * A virtual platform authenticator in `page`'s browser that says yes by itself (Chromium's CDP
 * WebAuthn domain), holding `credentials` to begin with; `credentials()` lists the passkeys it stores.
 *
 * @example
 * const authenticator = await addPasskeyAuthenticator(page)
 * expect(await authenticator.credentials()).toHaveLength(1)
 */
export async function addPasskeyAuthenticator(page: Page, credentials: readonly VirtualCredential[] = []) {
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
  for (const credential of credentials) await cdp.send('WebAuthn.addCredential', { authenticatorId, credential })
  return { credentials: async (): Promise<VirtualCredential[]> => (await cdp.send('WebAuthn.getCredentials', { authenticatorId })).credentials }
}
