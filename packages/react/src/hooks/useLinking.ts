import {
  type EmbeddedUser,
  getUser,
  isEmbeddedConnector,
  type LinkAccountParameters,
  type LinkedLogin,
  linkAccount,
  type UnlinkAccountParameters,
  unlinkAccount,
} from '@latchkey/core'
import { useAccount } from './useAccount.js'
import { type ActionState, useAction } from './useAction.js'
import { useClient } from './useClient.js'
import { type ReadState, useRead } from './useRead.js'

/**
 * The signed-in embedded-wallet user: linked logins (oldest first), wallets and second factors;
 * `idle` while no embedded wallet is connected, `data` null while the app backend has no session
 * (signed out there), read again when the account changes or on `refetch`.
 *
 * @example
 * const { data } = useUser()
 * data?.logins.map((login) => login.label)
 */
export function useUser(): ReadState<EmbeddedUser | null> {
  const client = useClient()
  const { address, connector, isConnected } = useAccount()
  const embedded = isConnected && isEmbeddedConnector(connector)
  return useRead([client, address, embedded ? connector : undefined], embedded, () => getUser(client, { connector: embedded ? connector : undefined }))
}

/**
 * Links another login to the signed-in user, proven by its own flow (email code in the consent
 * frame, passkey, OAuth popup, an external wallet's SIWE signature); `error` is
 * `AccountAlreadyLinkedError` for a login of another user, and nothing changed.
 *
 * @example
 * const { linkAccount } = useLinkAccount(); await linkAccount({ kind: 'passkey' })
 */
export function useLinkAccount(): ActionState<LinkedLogin> & { linkAccount(parameters: LinkAccountParameters): Promise<LinkedLogin> } {
  const client = useClient()
  const [run, state] = useAction((parameters: LinkAccountParameters) => linkAccount(client, parameters))
  return { ...state, linkAccount: run }
}

/**
 * Unlinks a login by its id while another remains; `error` is `LastLoginError` for the last one.
 *
 * @example
 * const { unlinkAccount } = useUnlinkAccount(); await unlinkAccount({ id: login.id })
 */
export function useUnlinkAccount(): ActionState<void> & { unlinkAccount(parameters: UnlinkAccountParameters): Promise<void> } {
  const client = useClient()
  const [run, state] = useAction((parameters: UnlinkAccountParameters) => unlinkAccount(client, parameters))
  return { ...state, unlinkAccount: run }
}
