import { type ConnectReturnType, connect } from '../actions/connect.js'
import { resolveConnector } from '../actions/internal.js'
import type { Client } from '../createClient.js'
import { BaseError } from '../errors/base.js'
import { toProviderError } from '../errors/rpc.js'
import type { Connector, OneClickSignIn } from '../types.js'
import { SignInNotConfiguredError, SignInRejectedError } from './errors.js'
import { type SignInParameters, signIn } from './signIn.js'
import type { SignInSession } from './store.js'

export type ConnectAndSignInParameters = SignInParameters & {
  connector: Connector | string
  chainId?: number | undefined
  signal?: AbortSignal | undefined
}

export type ConnectAndSignInReturnType = ConnectReturnType & { session: SignInSession }

/**
 * Connects and signs in. With WalletConnect and a backend that verifies CACAOs, in one approval
 * (`wc_sessionAuthenticate`: the wallet signs the SIWE message while it connects); a wallet that
 * does not, or refuses, or lets it expire, connects the plain way and then signs the SIWE message
 * with `personal_sign`. Other connectors: `connect`, then `signIn`.
 *
 * @example
 * const { accounts, session } = await connectAndSignIn(client, { connector: 'walletConnect' })
 */
export async function connectAndSignIn(client: Client, parameters: ConnectAndSignInParameters): Promise<ConnectAndSignInReturnType> {
  const auth = client.auth
  if (!auth) throw new SignInNotConfiguredError()
  const { connector, chainId, signal, ...signInParameters } = parameters
  const resolved = resolveConnector(client, connector)
  if (resolved.type !== 'walletConnect' || !auth.adapter.verifyCacao) {
    const connected = await connect(client, { connector: resolved, chainId, signal })
    return { ...connected, session: await signIn(client, signInParameters) }
  }

  const nonce = await auth.adapter.getNonce()
  const issuedAt = new Date()
  const fields: OneClickSignIn = {
    nonce,
    domain: typeof location === 'undefined' ? 'localhost' : location.host,
    uri: typeof location === 'undefined' ? 'http://localhost' : location.origin,
    statement: signInParameters.statement ?? `Sign in to ${typeof document === 'undefined' || !document.title ? 'this app' : document.title}.`,
    expirationTime: new Date(issuedAt.getTime() + (signInParameters.expirationSeconds ?? 7 * 86_400) * 1000).toISOString(),
  }
  const connected = await connect(client, { connector: resolved, chainId, signal, signIn: fields })
  // The wallet connected without signing: the SIWE message the usual way.
  if (!connected.cacaos?.length) return { ...connected, session: await signIn(client, signInParameters) }
  try {
    auth.set({ status: 'verifying', session: undefined, error: undefined })
    // The CACAO for the chain we are on; any other would sign in on a chain the app is not on.
    const cacao = connected.cacaos.find((item) => issuerChain(item) === connected.chainId) ?? connected.cacaos[0]
    const session = await auth.adapter.verifyCacao({ cacao, walletKind: 'walletConnect' })
    auth.set({ status: 'signedIn', session, error: undefined })
    return { ...connected, session }
  } catch (error) {
    const typed = error instanceof BaseError ? error : new SignInRejectedError({ cause: toProviderError(error) })
    auth.set({ status: 'error', session: undefined, error: typed })
    client._internal.report('signIn', typed)
    throw typed
  }
}

function issuerChain(cacao: unknown): number | undefined {
  const iss = (cacao as { p?: { iss?: unknown } } | undefined)?.p?.iss
  const match = typeof iss === 'string' ? /^did:pkh:eip155:(\d+):/.exec(iss) : null
  return match ? Number(match[1]) : undefined
}
