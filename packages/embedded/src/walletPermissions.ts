import { ClientsNotFoundError, MalformedGrantError } from './errors.js'
import { kmsCall } from './kmsCalls.js'
import type { PermissionResponse } from './permissions.js'
import type { WalletContext } from './walletContext.js'
import type { WalletSigning } from './walletSigning.js'

/** ERC-7715 permissions: grants the user approves in the consent frame, which the kms enforces. */
export function permissionsOf(context: WalletContext, signing: Pick<WalletSigning, 'listGrants'>) {
  const { now, signer, signedIn, withSession, submitStamped } = context
  const { listGrants } = signing

  return {
    /**
     * ERC-7715 `wallet_grantPermissions` (one request): checked (an expiry, only permissions the
     * kms enforces; GrantRequestError otherwise), approved by the user in the consent frame, which
     * makes the grant's key; created in the kms as a grant bound to that key. Answers the request
     * with `context`, the grant id.
     */
    async grantPermissions(params: readonly unknown[]): Promise<Record<string, unknown>> {
      const { toGrantAnswer, toGrantParameters } = await import('./permissions.js')
      const { credential, userId, organizationId, chainId } = signedIn()
      if (params.length !== 1) throw new MalformedGrantError('wallet_grantPermissions grants one permission request at a time')
      const request = params[0] as Record<string, unknown>
      const parameters = toGrantParameters(request, { account: credential.address, userId, now: now() })
      if (!signer.grants) throw new ClientsNotFoundError({ details: 'Grants need the consent frame, which makes and keeps their keys' })
      const body = JSON.stringify({ type: 'ACTIVITY_TYPE_LATCHKEY_CREATE_GRANT', timestampMs: String(now()), organizationId, parameters })
      const grants = signer.grants
      const result = await withSession(async () => {
        const { stamp, payload } = await grants.approve(
          { method: 'wallet_grantPermissions', params: [request] },
          { account: credential.address, chainId },
          body,
        )
        const created = await kmsCall(() => submitStamped('submit/create_grant', payload, stamp))
        const { grantId } = created['createGrantResult'] as { grantId: string }
        await grants.bind(grantId, (JSON.parse(payload) as { parameters: { apiKey: { publicKey: string } } }).parameters.apiKey.publicKey)
        return { grantId }
      })
      return toGrantAnswer(request, result, credential.address)
    },

    /** ERC-7715 `wallet_getPermissions`: the user's grants in force for this account (list_grants). */
    async getPermissions(): Promise<PermissionResponse[]> {
      const { toPermissionResponses } = await import('./permissions.js')
      const { credential } = signedIn()
      return toPermissionResponses((await listGrants()).filter((grant) => grant.account.toLowerCase() === credential.address.toLowerCase()))
    },

    /**
     * ERC-7715 `wallet_revokePermissions` (`{ permissionContext }`: the grant id): revoke_grant in
     * the kms, stamped by the consent frame without a prompt (revoking only takes power away),
     * which forgets the grant's key.
     */
    async revokePermissions(params: readonly unknown[]): Promise<null> {
      const { organizationId } = signedIn()
      const [first] = params as [{ permissionContext?: unknown; context?: unknown } | undefined]
      const grantId = first?.permissionContext ?? first?.context
      if (typeof grantId !== 'string' || grantId === '')
        throw new MalformedGrantError('wallet_revokePermissions needs { permissionContext }, the grant to revoke')
      if (!signer.grants) throw new ClientsNotFoundError({ details: 'Grants need the consent frame, which makes and keeps their keys' })
      const revoker = signer.grants.revoker(grantId)
      const body = JSON.stringify({ type: 'ACTIVITY_TYPE_LATCHKEY_REVOKE_GRANT', timestampMs: String(now()), organizationId, parameters: { grantId } })
      await withSession(async () => kmsCall(async () => submitStamped('submit/revoke_grant', body, await revoker.stamp(body))))
      return null
    },
  }
}
