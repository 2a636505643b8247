import type { Context } from 'hono'
import { z } from 'zod'
import { incompleteAnswer, ServerError } from '../errors.js'
import { callKms, currentSession, enforce, type RouteContext, readBody, validSession } from '../internal/context.js'
import { proveEmail } from '../internal/emailProof.js'
import { mfaFactorsOf } from '../internal/mfa.js'
import { attestation, challenge, email } from '../internal/schemas.js'
import { stampedActivity, submitUserStamped, userStamped } from '../internal/userStamped.js'
import { endSessionKeys } from '../revoke.js'
import {
  EmailAlreadyLinkedError,
  type KnownAccount,
  LastLoginError,
  LoginConflictError,
  type LoginKind,
  type LoginRow,
  newLoginId,
  type SessionRow,
  UnknownLoginError,
} from '../store.js'
import { type OAuth, ONE_OAUTH_PROOF, oauthLoginKind, oauthProof, oauthSubject, oneOAuthProof } from './oauth.js'
import { checkSiwe } from './siwe.js'

// Account linking (issue 28): one user, many logins. Each login is linked by completing its own
// flow while signed in; a login of another user is refused and nothing changes anywhere: the
// backend claims the login first, in a transaction that writes the kms side inside it and rolls
// back when the kms refuses.

/** A login of another user: never merged, never moved. */
export const accountAlreadyLinked = () =>
  new ServerError(409, 'account_already_linked', 'This login belongs to another user; sign in with it, or unlink it from that account first')
const alreadyYours = () => new ServerError(409, 'already_linked', 'This login is linked to your account already')
const emailAlreadyLinked = () => new ServerError(409, 'email_already_linked', 'This account has an email already (one per user); unlink it first')

/** The user behind the session cookie: an account of this backend's embedded wallets. */
async function signedInUser(c: Context, context: RouteContext): Promise<{ session: SessionRow; account: KnownAccount }> {
  const session = await currentSession(c, context)
  const account = session.organization_id ? await context.store.accountByOrganization(session.organization_id) : undefined
  if (!account || session.organization_id === null)
    throw new ServerError(403, 'no_account', 'This session is of a wallet this app did not create: it has no account to link logins to')
  return { session, account: { ...account, user_id: session.user_id ?? account.user_id } }
}

/** A login as `GET /auth/user` and the link routes answer it. */
const loginAnswer = (row: LoginRow) => ({ id: row.id, kind: row.kind, label: row.label, linkedAt: new Date(Number(row.created_at)).toISOString() })

/**
 * Links `row` for the signed-in user, with `kms` recording it in the kms; the typed 409s for a taken
 * login. An email (`emailAccount`) that another account holds unproven is taken over, and removed
 * from that account's kms user, so that email sign-in opens this wallet only.
 */
async function link(context: RouteContext, row: LoginRow, kms: () => Promise<string | null>, emailAccount?: boolean) {
  try {
    const linked = await context.store.linkLogin(
      row,
      kms,
      emailAccount
        ? { email: row.subject, organization_id: row.organization_id, user_id: row.user_id, address: row.address, created_at: row.created_at }
        : undefined,
      (squatted) => removeFromKms(context, squatted.organization_id, squatted),
    )
    return { login: loginAnswer(linked) }
  } catch (error) {
    if (error instanceof LoginConflictError) throw error.owner === 'self' ? alreadyYours() : accountAlreadyLinked()
    if (error instanceof EmailAlreadyLinkedError) throw emailAlreadyLinked()
    throw error
  }
}

/** A new login row of the signed-in user's account. */
const loginOf = (context: RouteContext, account: KnownAccount, kind: LoginKind, subject: string, label: string): LoginRow => ({
  id: newLoginId(),
  kind,
  subject,
  organization_id: account.organization_id,
  user_id: account.user_id,
  address: account.address,
  label,
  kms_id: null,
  created_at: context.now(),
})

/**
 * `GET /auth/user` (signed in) → `{userId, organizationId, logins: [{id, kind, label, linkedAt}],
 * wallets: [{address, kind: 'embedded' | 'external'}], mfa: {enrolled: [{factorId, type: 'totp' |
 * 'passkey', name, enrolledAt, lockedUntil?}]}}`: the user's linked logins, oldest first, wallets
 * (the embedded one, then each linked external wallet) and second factors, as the kms lists them
 * (`list_mfa_factors`: enrolled ones, `lockedUntil` while five wrong codes lock one). A guest
 * account (`POST /auth/guest`) with no login linked yet has `guest: true` and no logins. No
 * session: `null`, as `GET /auth/session` answers it.
 *
 * @example
 * app.get('/auth/user', user(context))
 */
export const user = (context: RouteContext) => async (c: Context) => {
  // No one signed in is an answer, as `GET /auth/session` gives it, not a failure.
  if (!(await validSession(c, context))) return c.json(null)
  const { account } = await signedInUser(c, context)
  const [logins, enrolled] = await Promise.all([
    context.store.loginsOf(account.organization_id),
    mfaFactorsOf(context.kms, account.organization_id, account.user_id),
  ])
  // A guest account until its first login is linked.
  const guest = logins.length === 0 && (await context.store.login('guest', account.organization_id)) !== undefined
  return c.json({
    userId: account.user_id,
    organizationId: account.organization_id,
    ...(guest ? { guest: true } : {}),
    logins: logins.map(loginAnswer),
    wallets: [
      { address: account.address, kind: 'embedded' as const },
      ...logins.filter((row) => row.kind === 'wallet').map((row) => ({ address: row.subject, kind: 'external' as const })),
    ],
    mfa: { enrolled },
  })
}

const emailStartSchema = z.object({ email })
const emailLinkSchema = userStamped.extend({ otpId: z.string().min(1).max(64), encryptedOtpBundle: z.string().min(1).max(4096) })

/**
 * One email per user: the kms user has one, and email sign-in's codes go to it. Asked before any
 * code is sent; the store asks again as it links, for two links at once.
 */
async function refuseSecondEmail(context: RouteContext, organizationId: string) {
  if ((await context.store.loginsOf(organizationId)).some((row) => row.kind === 'email')) throw emailAlreadyLinked()
}

/**
 * `POST /auth/user/link/email/start` `{email}` (signed in) → `{otpId, otpEncryptionTargetBundle}`:
 * the kms emails a code to the new address (init_otp from the parent organization, as a passkey
 * sign-up's email proof). The consent frame seals the typed code to the bundle's key.
 *
 * @example
 * app.post('/auth/user/link/email/start', linkEmailStart(context))
 */
export const linkEmailStart = (context: RouteContext) => async (c: Context) => {
  const { store, kms, now } = context
  const { account } = await signedInUser(c, context)
  const address = (await readBody(c.req.raw, emailStartSchema)).email.toLowerCase()
  await refuseSecondEmail(context, account.organization_id)
  // Counted as sign-in's codes are: per network, and per email.
  enforce(await context.limits.signInsPerIp(context.ipOf(c)), (minutes) => `Too many sign-in attempts from this network; try again in ${minutes} minutes`)
  enforce(await context.limits.codesPerEmail(address), (minutes) => `Too many codes sent to this email; try again in ${minutes} minutes`)
  const { activity } = await callKms(() =>
    kms.initOtp({
      type: 'ACTIVITY_TYPE_INIT_OTP_V3',
      timestampMs: String(now()),
      organizationId: context.organizationId,
      parameters: { otpType: 'OTP_TYPE_EMAIL', contact: address, appName: context.appName },
    }),
  )
  const { otpId, otpEncryptionTargetBundle } = activity.result.initOtpResultV2 ?? {}
  if (!otpId || !otpEncryptionTargetBundle) throw incompleteAnswer()
  await store.insertPendingCode({ otp_id: otpId, email: address, organization_id: context.organizationId, created_at: now() })
  return c.json({ otpId, otpEncryptionTargetBundle })
}

/** update_user_email that sets the signed-in user's email, stamped by their consent frame. */
const emailActivity = (account: KnownAccount) =>
  z.object({
    type: z.literal('ACTIVITY_TYPE_UPDATE_USER_EMAIL'),
    timestampMs: z.string(),
    organizationId: z.literal(account.organization_id, "must be the signed-in user's organization"),
    parameters: z.strictObject({ userId: z.literal(account.user_id, 'must be the signed-in user'), userEmail: email }),
  })

/**
 * `POST /auth/user/link/email` `{otpId, encryptedOtpBundle, activity, stamp}` (signed in) →
 * `{login}`: the kms checks the code (verify_otp); `activity` is update_user_email setting that
 * address, stamped by the user's own key in the consent frame after their Approve there (never by
 * the backend's delegated user). The backend claims the login, then hands the kms the stamped body
 * unchanged; so email sign-in opens this wallet. A kms refusal (a second factor or a fresh
 * verification asked for) is answered with the kms's own `{code, message, details}` as `kms`.
 * An email whose `POST /auth/email/start` made an account that no sign-in has entered yet (its code
 * never proven) is taken over: that account loses the email, here and in the kms, and nothing
 * else; an email a sign-in proved is another user's (409 `account_already_linked`).
 *
 * @example
 * app.post('/auth/user/link/email', linkEmail(context))
 */
export const linkEmail = (context: RouteContext) => async (c: Context) => {
  const { account } = await signedInUser(c, context)
  const input = await readBody(c.req.raw, emailLinkSchema)
  const update = stampedActivity(input, emailActivity(account))
  await refuseSecondEmail(context, account.organization_id)
  const address = await proveEmail(c, context, input)
  if (update.parameters.userEmail.toLowerCase() !== address)
    throw new ServerError(400, 'email_mismatch', 'The approved email is not the one the code was sent to')
  const row = loginOf(context, account, 'email', address, address)
  return c.json(
    await link(
      context,
      row,
      async () => {
        await submitUserStamped(context, 'update_user_email', input)
        return null
      },
      true,
    ),
  )
}

const oauthLinkSchema = oauthProof.refine(oneOAuthProof, ONE_OAUTH_PROOF)

/**
 * `POST /auth/user/link/oauth` `{provider, sessionPublicKey, idToken | code+codeVerifier+redirectUri}`
 * (signed in) → `{login}`: the ID token is verified as `POST /auth/oauth` verifies it (its nonce
 * binds `sessionPublicKey`, which must be the session's key; used once), then its identity is
 * recorded in the kms (create_oauth_providers) and is the user's login. A session with no key of
 * the wallet is refused (403 `session_key_required`), but for the embedded wallet's own Sign-In
 * with Ethereum, which only a holder of a kms credential of the user can sign: a linked outside
 * wallet's session, which could not sign a transaction, must not add a way in that could.
 *
 * @example
 * app.post('/auth/user/link/oauth', linkOAuth(context, oauth))
 */
export const linkOAuth = (context: RouteContext, oauth: OAuth) => async (c: Context) => {
  const { now } = context
  const { session, account } = await signedInUser(c, context)
  const input = await readBody(c.req.raw, oauthLinkSchema)
  if (!oauth.config(input.provider)) throw new ServerError(404, 'unknown_provider', `${oauth.displayName(input.provider)} sign-in is not configured`)
  if (session.session_public_key === null && session.address.toLowerCase() !== account.address.toLowerCase())
    throw new ServerError(
      403,
      'session_key_required',
      'This session holds no key of the wallet; sign in with email, a passkey or a social account to link a social account',
    )
  if (session.session_public_key !== null && session.session_public_key !== input.sessionPublicKey)
    throw new ServerError(400, 'invalid_request', "sessionPublicKey: must be this session's key")
  const token = input.idToken ?? (await oauth.exchange(input.provider, input.code!, input.codeVerifier!, input.redirectUri!))
  const claims = await oauth.verify(input.provider, token, input.sessionPublicKey, 'link')
  const providerName = oauth.displayName(input.provider)
  const row = loginOf(context, account, oauthLoginKind(input.provider), oauthSubject(claims), `${providerName} · ${claims.email}`)
  return c.json(
    await link(context, row, async () => {
      const delegated = await callKms(() => context.delegated.client(account.organization_id))
      const { activity } = await callKms(() =>
        delegated.createOauthProviders({
          type: 'ACTIVITY_TYPE_CREATE_OAUTH_PROVIDERS_V2',
          timestampMs: String(now()),
          organizationId: account.organization_id,
          parameters: { userId: account.user_id, oauthProviders: [{ providerName, oidcToken: token }] },
        }),
      )
      // The kms answers V2 activities under the V2 result key.
      return (activity.result.createOauthProvidersResultV2 ?? activity.result.createOauthProvidersResult)?.providerIds?.[0] ?? null
    }),
  )
}

const walletLinkSchema = z.object({
  message: z.string().min(1).max(8192),
  signature: z
    .string()
    .max(32_768)
    .regex(/^0x(?:[0-9a-fA-F]{2})+$/, 'must be 0x-prefixed hex bytes'),
})

/**
 * `POST /auth/user/link/wallet` `{message, signature}` (signed in) → `{login}`: a SIWE message
 * signed by the wallet, checked as `POST /auth/siwe` checks it (this browser's nonce, spent),
 * links the wallet's checksummed address. An embedded wallet of another user is that user's.
 *
 * @example
 * app.post('/auth/user/link/wallet', linkWallet(context))
 */
export const linkWallet = (context: RouteContext) => async (c: Context) => {
  const { account } = await signedInUser(c, context)
  const message = await checkSiwe(c, context, await readBody(c.req.raw, walletLinkSchema))
  if (message.address.toLowerCase() === account.address.toLowerCase()) throw alreadyYours()
  if (await context.store.accountByAddress(message.address)) throw accountAlreadyLinked()
  return c.json(await link(context, loginOf(context, account, 'wallet', message.address, message.address), async () => null))
}

/** create_authenticators registering one passkey for the signed-in user, stamped by their consent frame. */
const passkeyActivity = (account: KnownAccount) =>
  z.object({
    type: z.literal('ACTIVITY_TYPE_CREATE_AUTHENTICATORS_V2'),
    timestampMs: z.string(),
    organizationId: z.literal(account.organization_id, "must be the signed-in user's organization"),
    parameters: z.strictObject({
      userId: z.literal(account.user_id, 'must be the signed-in user'),
      authenticators: z.tuple([z.object({ authenticatorName: z.string().trim().min(1).max(128), challenge, attestation })]),
    }),
  })

/**
 * `POST /auth/user/link/passkey` `{activity, stamp}` (signed in) → `{login}`: `activity` is
 * create_authenticators registering one passkey for the user, stamped by the user's own key in the
 * consent frame after their Approve there (never by the backend's delegated user). The backend
 * claims the login (the passkey's credential id), then hands the kms the stamped body unchanged;
 * the kms verifies the attestation against the challenge. A kms refusal is answered with the
 * kms's own `{code, message, details}` as `kms`.
 *
 * @example
 * app.post('/auth/user/link/passkey', linkPasskey(context))
 */
export const linkPasskey = (context: RouteContext) => async (c: Context) => {
  const { account } = await signedInUser(c, context)
  const input = await readBody(c.req.raw, userStamped)
  const [passkey] = stampedActivity(input, passkeyActivity(account)).parameters.authenticators
  const row = loginOf(context, account, 'passkey', passkey.attestation.credentialId, passkey.authenticatorName)
  return c.json(
    await link(context, row, async () => {
      const result = await submitUserStamped(context, 'create_authenticators', input)
      return (result['createAuthenticatorsResult'] as { authenticatorIds?: string[] } | undefined)?.authenticatorIds?.[0] ?? null
    }),
  )
}

/**
 * `DELETE /auth/user/logins/:id` (signed in) → 204: the login is unlinked, here and in the kms (its
 * authenticator, OAuth identity, or the user's email), while another login remains; the last one
 * is refused (409 `last_login`). Every other session of the account ends with it, as signing out
 * everywhere ends them (whichever of them the login opened): their cookies and refresh tokens, and
 * every kms session key of the user but this session's own, those no session here knows included
 * (a passkey's stamp_login never posted to `/auth/login`). The session that asked stays signed in,
 * without the email if it was the one unlinked. As at sign-out, until the kms has removed the login
 * and deleted the keys nothing is ended: a kms refusal or outage answers its error.
 *
 * @example
 * app.delete('/auth/user/logins/:id', unlink(context))
 */
export const unlink = (context: RouteContext) => async (c: Context) => {
  const { now } = context
  const { session, account } = await signedInUser(c, context)
  const id = c.req.param('id') ?? ''
  await context.store
    .unlinkLogin(account.organization_id, id, session.id, now(), async (row) => {
      await removeFromKms(context, account.organization_id, row)
      // After the login is gone from the kms, so it mints no key that outlives this.
      const except = session.session_public_key === null ? [] : [session.session_public_key]
      await endSessionKeys(context, { organizationId: account.organization_id, userId: account.user_id, except })
    })
    .catch((error: unknown) => {
      if (error instanceof UnknownLoginError) throw new ServerError(404, 'unknown_login', 'This account has no such login')
      if (error instanceof LastLoginError)
        throw new ServerError(409, 'last_login', 'This is the last way to sign in to this account; link another before removing it')
      throw error
    })
  return c.body(null, 204)
}

/** Removes an unlinked (or taken over) login from the kms, as the backend's delegated user: its authenticator, OAuth identity, or the user's email. */
async function removeFromKms(context: RouteContext, organizationId: string, row: LoginRow) {
  const { kms, now } = context
  if (row.kind === 'wallet') return
  const userId = row.user_id
  const delegated = await callKms(() => context.delegated.client(organizationId))
  if (row.kind === 'email') {
    const { user } = await callKms(() => kms.getUser({ organizationId, userId }))
    if (user.userEmail?.toLowerCase() !== row.subject) return
    await callKms(() =>
      delegated.updateUserEmail({
        type: 'ACTIVITY_TYPE_UPDATE_USER_EMAIL',
        timestampMs: String(now()),
        organizationId,
        parameters: { userId, userEmail: '' },
      }),
    )
  } else if (row.kind === 'passkey') {
    const { authenticators } = await callKms(() => kms.getAuthenticators({ organizationId, userId }))
    const found = authenticators.find((authenticator) => authenticator.credentialId === row.subject)
    if (!found) return
    await callKms(() =>
      delegated.deleteAuthenticators({
        type: 'ACTIVITY_TYPE_DELETE_AUTHENTICATORS',
        timestampMs: String(now()),
        organizationId,
        parameters: { userId, authenticatorIds: [found.authenticatorId] },
      }),
    )
  } else {
    const { oauthProviders } = await callKms(() => kms.getOauthProviders({ organizationId, userId }))
    const found = oauthProviders.find((provider) => `${provider.issuer} ${provider.subject}` === row.subject)
    if (!found) return
    await callKms(() =>
      delegated.deleteOauthProviders({
        type: 'ACTIVITY_TYPE_DELETE_OAUTH_PROVIDERS',
        timestampMs: String(now()),
        organizationId,
        parameters: { userId, providerIds: [found.providerId] },
      }),
    )
  }
}
