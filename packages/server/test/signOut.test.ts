import { serializeTransaction } from 'viem'
import { describe, expect, test } from 'vitest'
import { answer, generateApiKeyPair, useBackend } from './backend.js'

// A browser's kms session key is registered only by a sign-in (the wallet's frame key, bound to a
// fresh verification), never at the page's word, and sign-out deletes it in the kms (issue 25).

const { t, post, signedUpWithPasskey, stampLogin, withKey, withPasskey } = useBackend()
const UNKNOWN_KEY = 'Turnkey error 16: could not find public key in organization or its parent organization'

/** A second browser of `account`'s user: a stamp_login by the passkey for a new key, then /auth/login. */
async function secondBrowser(account: Awaited<ReturnType<typeof signedUpWithPasskey>>) {
  const sessionKey = generateApiKeyPair()
  const session = await stampLogin(withPasskey(account.authenticator), sessionKey.apiPublicKey, account.organizationId)
  const response = await post('/auth/login', { session, kind: 'passkey' })
  expect(response.status).toBe(200)
  return { sessionKey, cookie: response.headers.get('set-cookie')!.split(';')[0]! }
}
const sessionOf = async (cookie: string) => (await t.app.request('/auth/session', { headers: { cookie } })).json()

type Account = Awaited<ReturnType<typeof signedUpWithPasskey>>
/** An ERC-7715 grant (create_grant) of `account`'s user made by the session holding `sessionKey`, as the consent frame makes it: its id and its key. */
async function grantBy(account: Account, sessionKey: ReturnType<typeof generateApiKeyPair>) {
  const grantKey = generateApiKeyPair()
  const { activity } = await withKey(sessionKey).request<
    Record<string, unknown>,
    { activity: { status: string; result: { createGrantResult: { grantId: string } } } }
  >('/public/v1/submit/create_grant', {
    type: 'ACTIVITY_TYPE_LATCHKEY_CREATE_GRANT',
    timestampMs: String(t.clock),
    organizationId: account.organizationId,
    parameters: {
      userId: account.userId,
      apiKey: { apiKeyName: 'game', publicKey: grantKey.apiPublicKey },
      grant: {
        chainId: '31337',
        account: account.address,
        expiry: String(Math.floor(t.clock / 1000) + 600),
        permissions: [{ type: 'native-token-recurring-allowance', data: { allowance: '1000', period: '86400' } }],
      },
    },
  })
  expect(activity.status).toBe('ACTIVITY_STATUS_COMPLETED')
  return { grantId: activity.result.createGrantResult.grantId, grantKey }
}
/** A transfer of 1 wei signed with the grant's key: 'signed', or the refusal. */
const signInGrant = (account: Account, grant: { grantKey: ReturnType<typeof generateApiKeyPair> }) =>
  withKey(grant.grantKey)
    .signTransaction({
      type: 'ACTIVITY_TYPE_SIGN_TRANSACTION_V2',
      timestampMs: String(t.clock),
      organizationId: account.organizationId,
      parameters: {
        signWith: account.address,
        unsignedTransaction: serializeTransaction({ chainId: 31337, type: 'eip1559', to: account.address as `0x${string}`, value: 1n, gas: 21_000n }).slice(2),
        type: 'TRANSACTION_TYPE_ETHEREUM',
      },
    })
    .then(
      () => 'signed',
      (error: Error) => error.message.replace(/ \(Details: .*\)$/s, ''),
    )
const grantsOf = async (account: Account, sessionKey: ReturnType<typeof generateApiKeyPair>) =>
  (
    await withKey(sessionKey).request<Record<string, unknown>, { grants: { grantId: string }[] }>('/public/v1/query/list_grants', {
      organizationId: account.organizationId,
      userId: account.userId,
    })
  ).grants.map((grant) => grant.grantId)

describe('no route registers a key of the page’s choosing', () => {
  test('error: the one-line fetch of security review H1 gets 404 and registers nothing', async () => {
    const account = await signedUpWithPasskey()
    const attacker = generateApiKeyPair()
    const response = await post('/auth/session-key', { publicKey: attacker.apiPublicKey, expirationSeconds: 86400 }, { cookie: account.cookie })
    expect(response.status).toBe(404)
    await expect(withKey(attacker).getWhoami({ organizationId: account.organizationId })).rejects.toThrow(UNKNOWN_KEY)
  })
})

describe('POST /auth/signout', () => {
  test('default: the session’s key is deleted in the kms: its stamps are refused; another browser’s key still stamps', async () => {
    const account = await signedUpWithPasskey()
    const other = await secondBrowser(account)
    expect(await withKey(account.sessionKey).getWhoami({ organizationId: account.organizationId })).toMatchObject({ userId: account.userId })

    expect((await post('/auth/signout', {}, { cookie: account.cookie })).status).toBe(204)
    await expect(withKey(account.sessionKey).getWhoami({ organizationId: account.organizationId })).rejects.toThrow(UNKNOWN_KEY)
    expect(await withKey(other.sessionKey).getWhoami({ organizationId: account.organizationId })).toMatchObject({ userId: account.userId })
    expect(await sessionOf(account.cookie)).toBeNull()
    expect(await sessionOf(other.cookie)).toMatchObject({ userId: account.userId })
  })

  test('behavior: the grants the session made end with it in the kms; those of another session of the user stay', async () => {
    const account = await signedUpWithPasskey()
    const other = await secondBrowser(account)
    const made = await grantBy(account, account.sessionKey)
    const kept = await grantBy(account, other.sessionKey)
    expect(await signInGrant(account, made)).toBe('signed')

    expect((await post('/auth/signout', {}, { cookie: account.cookie })).status).toBe(204)
    // The grant's key is gone with the session's: its stamp is refused as an unknown key's (the wallet's GRANT_EXPIRED).
    expect(await signInGrant(account, made)).toBe(UNKNOWN_KEY)
    expect(await grantsOf(account, other.sessionKey)).toEqual([kept.grantId])
    expect(await signInGrant(account, kept)).toBe('signed')
    // Signed in again: the new session lists only the grant still in force.
    const again = await secondBrowser(account)
    expect(await grantsOf(account, again.sessionKey)).toEqual([kept.grantId])
  })

  test('behavior: {everywhere: true} deletes every key of the user in the kms and ends every session of the account', async () => {
    const account = await signedUpWithPasskey()
    const other = await secondBrowser(account)
    expect((await post('/auth/signout', { everywhere: true }, { cookie: other.cookie })).status).toBe(204)
    for (const key of [account.sessionKey, other.sessionKey])
      await expect(withKey(key).getWhoami({ organizationId: account.organizationId })).rejects.toThrow(UNKNOWN_KEY)
    expect([await sessionOf(account.cookie), await sessionOf(other.cookie)]).toEqual([null, null])
  })

  test('error: a malformed body is refused and nothing is deleted', async () => {
    const account = await signedUpWithPasskey()
    expect(await answer(await post('/auth/signout', { everywhere: 'yes' }, { cookie: account.cookie }))).toEqual([
      400,
      { error: { code: 'invalid_request', message: 'everywhere: Invalid input: expected boolean, received string' } },
    ])
    expect(await withKey(account.sessionKey).getWhoami({ organizationId: account.organizationId })).toMatchObject({ userId: account.userId })
    expect(await sessionOf(account.cookie)).toMatchObject({ userId: account.userId })
  })
})
