import type { Client } from '../../createClient.js'
import type { ConnectReturnType } from '../connect.js'
import { connectSignedIn, type EmbeddedTarget, embeddedConnector, runFlow } from './internal.js'

export type SignInAsGuestParameters = EmbeddedTarget

/**
 * Whether the app backend offers "Continue as guest" (its `guests` option, which `GET /auth/config`
 * publishes), read without loading the embedded wallet's code; false when the backend cannot be
 * read. Errors: ConnectorNotFoundError (no embedded connector).
 *
 * @example
 * if (await getGuestSignIn(client)) showGuestButton()
 */
export function getGuestSignIn(client: Client, parameters: EmbeddedTarget = {}): Promise<boolean> {
  return embeddedConnector(client, parameters).offersGuests()
}

/**
 * "Continue as guest": an embedded wallet with no login (`POST /auth/guest`), then connects it.
 * Its one key is the consent frame's and lives a day: clearing this browser's data, or that day
 * passing, loses the wallet unless the user links an email, a passkey or a social login first
 * (`linkAccount`, which keeps the address). Call it from a user's click: each guest is an account
 * at the key-management service, and the backend limits them. Errors: CannotProceedError (the
 * backend offers no guests, or a rate limit: `details` says which).
 *
 * @example
 * const { accounts } = await signInAsGuest(client)
 */
export function signInAsGuest(client: Client, parameters: SignInAsGuestParameters = {}): Promise<ConnectReturnType> {
  return runFlow(client, 'signInAsGuest', parameters, async (flows, connector) => {
    await flows.wallet.continueAsGuest()
    return connectSignedIn(client, connector)
  })
}
