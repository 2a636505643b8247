import { ApiKeyStamper } from '@turnkey/api-key-stamper'
import { TurnkeyClient } from '@turnkey/http'
import { describe, expect, test } from 'vitest'
import { createServerApp } from '../src/index.js'
import { answer, generateApiKeyPair, newEmail, useBackend } from './backend.js'

// Rotating the backend's API key (the runbook in deploy/ROTATION.md): the parent user gets a new
// key, the backend restarts with it, the old key is deleted. Delegated users' keys derive from
// the delegation secret, which stays: the accounts made under the old key keep working.

const { t, post, signedInByEmail } = useBackend()
const UNKNOWN_KEY = 'Turnkey error 16: could not find public key in organization or its parent organization'

/** Registers a new API key for the parent user, as the runbook's first step: the old key still works. */
async function addParentKey() {
  const next = generateApiKeyPair()
  const { userId } = await t.backend.getWhoami({ organizationId: t.parentOrganizationId })
  const { apiKeys: before } = await t.backend.getApiKeys({ organizationId: t.parentOrganizationId, userId })
  await t.backend.createApiKeys({
    type: 'ACTIVITY_TYPE_CREATE_API_KEYS_V2',
    timestampMs: String(++t.clock),
    organizationId: t.parentOrganizationId,
    parameters: { userId, apiKeys: [{ apiKeyName: 'backend, rotated', publicKey: next.apiPublicKey, curveType: 'API_KEY_CURVE_P256' }] },
  })
  return { next, userId, oldKeyIds: before.map((key) => key.apiKeyId) }
}

describe('rotating the backend’s API key', () => {
  test('behavior: restarted with a new API key and the delegation secret, with the old key deleted, the backend still serves an existing email account (sign-in, sign-out through its delegated user)', async () => {
    const email = newEmail()
    const first = await signedInByEmail(email)
    const { next, userId, oldKeyIds } = await addParentKey()
    t.app = createServerApp({ ...t.options, ...next, delegationSecret: t.backendKey.apiPrivateKey })
    const parent = new TurnkeyClient({ baseUrl: t.kms.url }, new ApiKeyStamper(next))
    await parent.deleteApiKeys({
      type: 'ACTIVITY_TYPE_DELETE_API_KEYS',
      timestampMs: String(++t.clock),
      organizationId: t.parentOrganizationId,
      parameters: { userId, apiKeyIds: oldKeyIds },
    })
    try {
      await expect(t.backend.getWhoami({ organizationId: t.parentOrganizationId })).rejects.toThrow(UNKNOWN_KEY)
      const again = await signedInByEmail(email)
      expect([again.organizationId, again.userId]).toEqual([first.organizationId, first.userId])
      expect((await post('/auth/signout', { everywhere: true }, { cookie: again.cookie })).status).toBe(204)
      for (const user of [first.user, again.user]) await expect(user.getWhoami({ organizationId: first.organizationId })).rejects.toThrow(UNKNOWN_KEY)
    } finally {
      // The file's other tests start from the original key.
      await parent.createApiKeys({
        type: 'ACTIVITY_TYPE_CREATE_API_KEYS_V2',
        timestampMs: String(++t.clock),
        organizationId: t.parentOrganizationId,
        parameters: { userId, apiKeys: [{ apiKeyName: 'backend', publicKey: t.backendKey.apiPublicKey, curveType: 'API_KEY_CURVE_P256' }] },
      })
    }
  })

  test('error: restarted with a new API key but without the delegation secret, the existing account’s sign-out is refused by the kms and ends nothing', async () => {
    const email = newEmail()
    await signedInByEmail(email)
    const { next } = await addParentKey()
    t.app = createServerApp({ ...t.options, ...next })
    const again = await signedInByEmail(email)
    expect(await answer(await post('/auth/signout', { everywhere: true }, { cookie: again.cookie }))).toEqual([
      400,
      { error: { code: 'kms_refused', message: 'could not find public key in organization or its parent organization' } },
    ])
    expect(await again.user.getWhoami({ organizationId: again.organizationId })).toMatchObject({ userId: again.userId })
  })
})
