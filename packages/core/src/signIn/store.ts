import type { BaseError } from '../errors/base.js'
import type { Address, ConnectorType, Hex, State } from '../types.js'

/** What the app's backend says about a signed-in user. `address` is the one fact every session has. */
export type SignInSession = {
  address: Address
  chainId?: number | undefined
  /** ISO time the session ends. */
  expiresAt?: string | undefined
  /** How the wallet connected: injected, walletConnect, embedded. */
  walletKind?: string | undefined
  [key: string]: unknown
}

/** What the message builder gets: the EIP-4361 fields Latchkey fills in. */
export type CreateMessageParameters = {
  address: Address
  chainId: number
  nonce: string
  domain: string
  uri: string
  statement?: string | undefined
  issuedAt: Date
  expirationTime?: Date | undefined
}

/**
 * How sign-in talks to the app's backend. `serverAdapter(url)` is the one for @latchkey/server;
 * an app with its own backend writes these four (five) functions.
 */
export type SignInAdapter = {
  getNonce(): Promise<string>
  /** Default: an EIP-4361 message built with viem, loaded with the first sign-in. */
  createMessage?: ((parameters: CreateMessageParameters) => string | Promise<string>) | undefined
  verify(parameters: { message: string; signature: Hex; walletKind: ConnectorType | undefined }): Promise<SignInSession>
  /** Verifies a WalletConnect one-click CACAO (CAIP-74); without it, WalletConnect signs in with personal_sign. */
  verifyCacao?: ((parameters: { cacao: unknown; walletKind: ConnectorType | undefined }) => Promise<SignInSession>) | undefined
  /** The session the backend still holds (a reload); `null` when signed out. */
  getSession?: (() => Promise<SignInSession | null>) | undefined
  signOut(): Promise<void>
}

/** idle → signing → verifying → signedIn | error; from error (a dismissed prompt) sign-in starts again. */
export type SignInStatus = 'idle' | 'signing' | 'verifying' | 'signedIn' | 'error'

export type SignInState = {
  readonly status: SignInStatus
  readonly session: SignInSession | undefined
  readonly error: BaseError | undefined
}

export type SignInStore = {
  readonly adapter: SignInAdapter
  getState(): SignInState
  subscribe(listener: (state: SignInState) => void): () => void
  /** @internal */
  set(next: SignInState): void
  /** @internal Asks the backend for a session that survived a reload. */
  restore(): Promise<void>
  /** @internal Ends the session here and at the backend. */
  end(): Promise<void>
}

const idle: SignInState = { status: 'idle', session: undefined, error: undefined }

const sameAddress = (a: string | undefined, b: string | undefined) => a !== undefined && b !== undefined && a.toLowerCase() === b.toLowerCase()

/**
 * The sign-in state beside the connection state. A session belongs to one address: when the
 * wallet switches to another account or disconnects, the session ends (here and at the backend).
 *
 * @internal createClient builds it when given `signIn`.
 */
export function createSignInStore(
  adapter: SignInAdapter,
  connection: { getState(): State; subscribe(listener: (state: State, previous: State) => void): () => void },
): SignInStore {
  let state: SignInState = idle
  const listeners = new Set<(state: SignInState) => void>()
  let restoring: Promise<void> | undefined

  const store: SignInStore = {
    adapter,
    getState: () => state,
    subscribe(listener) {
      listeners.add(listener)
      return () => void listeners.delete(listener)
    },
    set(next) {
      if (next === state) return
      state = next
      for (const listener of [...listeners]) listener(state)
    },
    restore() {
      restoring ??= (async () => {
        const session = await adapter.getSession?.().catch(() => null)
        // A sign-in that started meanwhile wins.
        if (!session || state.status !== 'idle') return
        const account = connection.getState().connection?.accounts[0]
        if (account && !sameAddress(account, session.address)) return void (await adapter.signOut().catch(() => undefined))
        store.set({ status: 'signedIn', session, error: undefined })
      })()
      return restoring
    },
    async end() {
      const had = state.session
      store.set(idle)
      if (had) await adapter.signOut().catch(() => undefined)
    },
  }

  connection.subscribe((current, previous) => {
    const session = state.session
    if (!session) return
    const account = current.connection?.accounts[0]
    // Disconnected, or another account: "I am this address" no longer holds.
    if ((previous.connection && !current.connection) || (account && !sameAddress(account, session.address))) void store.end()
  })
  return store
}
