import { type UpgradeAccountParameters, type UpgradeAccountReturnType, upgradeAccount } from '@latchkey/core'
import { type ActionState, useAction } from './useAction.js'
import { useClient } from './useClient.js'

/**
 * Upgrades the embedded wallet's account to an EIP-7702 smart account on the current chain; `error`
 * is `InvalidAuthorizationError` for an authorization the wallet will not sign.
 *
 * @example
 * const { upgradeAccount, data } = useUpgradeAccount(); await upgradeAccount()
 */
export function useUpgradeAccount(): ActionState<UpgradeAccountReturnType> & {
  upgradeAccount(parameters?: UpgradeAccountParameters): Promise<UpgradeAccountReturnType>
} {
  const client = useClient()
  const [run, state] = useAction((parameters?: UpgradeAccountParameters) => upgradeAccount(client, parameters))
  return { ...state, upgradeAccount: run }
}
