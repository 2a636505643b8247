import type { Client } from '../../createClient.js'
import type { ConnectReturnType } from '../connect.js'
import { connectSignedIn, type EmbeddedTarget, runFlow } from './internal.js'

export type SignUpWithPasskeyParameters = EmbeddedTarget & { email?: string | undefined; passkeyIdentifier?: string | undefined }

/**
 * Creates a passkey and, with it, the user's wallet; then connects. Needs an email or a
 * passkeyIdentifier (SPEC §5). An email is proven before it is the account's: the user types the
 * code it gets in the consent frame (the kms frames origin), as in email sign-in. Errors:
 * WebauthnCeremonyError (its `code` is the ceremony code), WebauthnNotSupportedError,
 * InvalidCodeError (a wrong or expired code: call again), UserRejectedRequestError (4001: cancelled
 * in the frame), CannotProceedError (an email that has an account already: sign in with it by email).
 *
 * @example
 * await signUpWithPasskey(client, { email: 'ada@example.com' })
 */
export function signUpWithPasskey(client: Client, parameters: SignUpWithPasskeyParameters): Promise<ConnectReturnType> {
  return runFlow(client, 'signUpWithPasskey', parameters, async (flows, connector) => {
    await flows.passkeys.signUp({ email: parameters.email, passkeyIdentifier: parameters.passkeyIdentifier })
    return connectSignedIn(client, connector)
  })
}

/**
 * Signs in with a passkey alone (the browser's prompt picks it) and connects.
 *
 * @example
 * await signInWithPasskey(client)
 */
export function signInWithPasskey(client: Client, parameters: EmbeddedTarget = {}): Promise<ConnectReturnType> {
  return runFlow(client, 'signInWithPasskey', parameters, async (flows, connector) => {
    await flows.passkeys.signIn()
    return connectSignedIn(client, connector)
  })
}

export type AddPasskeyParameters = EmbeddedTarget & { name?: string | undefined }

/**
 * Registers another passkey for the signed-in user; answers its authenticator id.
 *
 * @example
 * const authenticatorId = await addPasskey(client, { name: 'Laptop' })
 */
export function addPasskey(client: Client, parameters: AddPasskeyParameters = {}): Promise<string> {
  return runFlow(client, 'addPasskey', parameters, (flows) => flows.passkeys.add(parameters.name))
}
