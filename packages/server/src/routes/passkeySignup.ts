import type { Context } from 'hono'
import { z } from 'zod'
import { ServerError } from '../errors.js'
import { enforce, type RouteContext, readBody, startSession } from '../internal/context.js'
import { attestation, challenge, compressedP256Key, email, SESSION_KEY_SECONDS, sessionKeySeconds } from '../internal/schemas.js'
import { createAccountSubOrganization } from '../internal/subOrganization.js'
import { StoreConflictError } from '../store.js'

const signupSchema = z.object({
  email: email.optional(),
  passkeyIdentifier: z.string().trim().min(1).max(128).optional(),
  challenge,
  attestation,
  sessionPublicKey: compressedP256Key,
  sessionSeconds: sessionKeySeconds.optional(),
})

const passkeyTaken = () => new ServerError(409, 'passkey_exists', 'This passkey is already registered; sign in with it')

/**
 * `POST /auth/passkey/signup` `{email?, passkeyIdentifier?, challenge, attestation, sessionPublicKey,
 * sessionSeconds?}` → `{organizationId, userId, address}` (of the account it creates) and the
 * session cookie (kind 'passkey').
 *
 * Creates a sub-organization whose root user (named by the email, else the passkey identifier)
 * has the passkey as its authenticator and the browser's session key as an API key that expires
 * after `sessionSeconds` (default 900), with the 'Turnkey HD' Ethereum wallet. The kms verifies the
 * attestation; nothing is stored when it refuses.
 *
 * The email is not verified here, so it binds nothing (security review H2): it is kept as the
 * account's unverified email, is not the kms user's email (no code or recovery is sent to it) and
 * never names the account to an email or OAuth sign-in. Nor is it looked up: a known and an
 * unknown email are answered alike (review L2).
 *
 * @example
 * app.post('/auth/passkey/signup', passkeySignup(context))
 */
export const passkeySignup = (context: RouteContext) => async (c: Context) => {
  const { store, now } = context
  const input = await readBody(c.req.raw, signupSchema)
  const address = input.email?.toLowerCase()
  const userName = address ?? input.passkeyIdentifier
  if (userName === undefined) throw new ServerError(400, 'missing_identifier', 'Registering a passkey needs an email or a passkeyIdentifier')
  enforce(await context.limits.signInsPerIp(context.ipOf(c)), (minutes) => `Too many sign-in attempts from this network; try again in ${minutes} minutes`)
  if (await store.passkeyAccount(input.attestation.credentialId)) throw passkeyTaken()

  const created = await createAccountSubOrganization(context, userName, {
    userName,
    apiKeys: [
      {
        apiKeyName: 'session',
        publicKey: input.sessionPublicKey,
        curveType: 'API_KEY_CURVE_P256',
        expirationSeconds: String(input.sessionSeconds ?? SESSION_KEY_SECONDS.default),
      },
    ],
    authenticators: [{ authenticatorName: 'Passkey', challenge: input.challenge, attestation: input.attestation }],
    oauthProviders: [],
  })
  const account = {
    credential_id: input.attestation.credentialId,
    organization_id: created.subOrganizationId,
    user_id: created.userId,
    address: created.address,
    unverified_email: address ?? null,
    passkey_identifier: input.passkeyIdentifier ?? null,
    created_at: now(),
  }
  try {
    await store.insertPasskeyAccount(account)
  } catch (error) {
    // Two sign-ups with the same passkey at once: the second loses here.
    if (error instanceof StoreConflictError) throw passkeyTaken()
    throw error
  }
  await startSession(c, context, { ...account, email: null, session_public_key: input.sessionPublicKey }, 'passkey')
  return c.json({ organizationId: account.organization_id, userId: account.user_id, address: account.address })
}
