import type { Client } from '../createClient.js'
import { BaseError } from '../errors/base.js'
import { NotConnectedError } from '../errors/connection.js'
import { toProviderError } from '../errors/rpc.js'
import { store } from './actions.js'
import { SignInRejectedError } from './errors.js'
import type { CreateMessageParameters, SignInSession } from './store.js'

/**
 * The EIP-4361 message for `parameters`, built with viem's SIWE module, which loads with the
 * first call (it stays out of the eager bundle).
 *
 * @example
 * const message = await createSiweMessage({ address, chainId: 1, nonce, domain: location.host, uri: location.origin, issuedAt: new Date() })
 */
export async function createSiweMessage(parameters: CreateMessageParameters): Promise<string> {
  const { createSiweMessage: build } = await import('viem/siwe')
  return build({ version: '1', ...parameters })
}

export type SignInParameters = {
  /** The human line of the message. Default: "Sign in to {page title}." */
  statement?: string | undefined
  /** How long the signed message is good for. Default 7 days. */
  expirationSeconds?: number | undefined
}

/**
 * Sign-In with Ethereum: a nonce from the backend, an EIP-4361 message for the connected address
 * and chain, one signature in the wallet, verification by the backend. A dismissed prompt leaves
 * the state `error`, from which signing in again starts afresh.
 *
 * @example
 * const session = await signIn(client)
 */
export async function signIn(client: Client, parameters: SignInParameters = {}): Promise<SignInSession> {
  const auth = store(client)
  const connection = client.getState().connection
  const connector = client.getConnectors().find((candidate) => candidate.id === connection?.connectorId)
  // signMessage logs its own failure: a dismissed prompt is one warning, not two.
  let loggedBySigning: unknown
  try {
    if (!connection) throw new NotConnectedError()
    const address = connection.accounts[0]
    auth.set({ status: 'signing', session: undefined, error: undefined })
    const nonce = await auth.adapter.getNonce()
    const issuedAt = new Date()
    const fields: CreateMessageParameters = {
      address,
      chainId: connection.chainId,
      nonce,
      domain: typeof location === 'undefined' ? 'localhost' : location.host,
      uri: typeof location === 'undefined' ? 'http://localhost' : location.origin,
      statement: parameters.statement ?? `Sign in to ${typeof document === 'undefined' || !document.title ? 'this app' : document.title}.`,
      issuedAt,
      expirationTime: new Date(issuedAt.getTime() + (parameters.expirationSeconds ?? 7 * 86_400) * 1000),
    }
    const message = await (auth.adapter.createMessage ?? createSiweMessage)(fields)
    // The signing code (viem's wallet client) loads with the first sign-in, not with the page.
    const { signMessage } = await import('../actions/signMessage.js')
    const signature = await signMessage(client, { message, account: address }).catch((error: unknown) => {
      loggedBySigning = error
      throw error
    })
    // The wallet may have moved on while the prompt was open.
    if (client.getState().connection?.accounts[0] !== address) throw new SignInRejectedError({ details: 'The account changed while signing.' })
    auth.set({ status: 'verifying', session: undefined, error: undefined })
    // Test doubles are no wallet kind a backend knows.
    const session = await auth.adapter.verify({ message, signature, walletKind: connector?.type === 'mock' ? undefined : connector?.type })
    auth.set({ status: 'signedIn', session, error: undefined })
    return session
  } catch (error) {
    const typed =
      error instanceof BaseError ? error : error instanceof Error && !('code' in error) ? new SignInRejectedError({ cause: error }) : toProviderError(error)
    auth.set({ status: 'error', session: undefined, error: typed })
    if (typed !== loggedBySigning) client._internal.report('signIn', typed)
    throw typed
  }
}
