import type { Context, Hono } from 'hono'
import { z } from 'zod'
import { ServerError } from '../errors.js'
import { type RouteContext, readBody } from '../internal/context.js'
import { email } from '../internal/schemas.js'
import { createAccountSubOrganization, type EndUser } from '../internal/subOrganization.js'
import { LoginConflictError, type LoginKind, type LoginRow, newLoginId } from '../store.js'
import { OAUTH_PROVIDER_NAME, type OAuth, oauthLoginKind } from './oauth.js'
import { accountAlreadyLinked } from './user.js'

// Pregenerated wallets (issue 28): the app's backend creates a user and wallet for an identity
// before its person ever signs in; the first sign-in by that identity claims it.

/** The most rows `POST /admin/users:batch` takes. */
export const MAX_BATCH_USERS = 1000
/** How many rows of a batch are with the kms at once. */
const BATCH_PARALLEL = 8

const printable = z.string().regex(/^[\x21-\x7e]{1,255}$/, 'must be 1 to 255 printable ASCII characters without spaces')
const ONE_IDENTITY = 'send exactly one of email, provider with subject, or externalId'
/** What names a pregenerated user: an email, a configured provider's subject, or the app's own id. */
const userSchema = z
  .strictObject({
    email: email.optional(),
    provider: z.string().regex(OAUTH_PROVIDER_NAME, 'must be a provider name').optional(),
    subject: printable.optional(),
    externalId: printable.optional(),
  })
  .refine(
    (input) =>
      [input.email !== undefined, input.provider !== undefined || input.subject !== undefined, input.externalId !== undefined].filter(Boolean).length === 1,
    ONE_IDENTITY,
  )
  .refine((input) => (input.provider === undefined) === (input.subject === undefined), 'provider and subject go together')
type UserInput = z.infer<typeof userSchema>

/** A sign-in identity for the user of an `externalId`: an email, or a configured provider's subject. */
const loginSchema = z
  .strictObject({
    externalId: printable,
    email: email.optional(),
    provider: z.string().regex(OAUTH_PROVIDER_NAME, 'must be a provider name').optional(),
    subject: printable.optional(),
  })
  .refine(
    (input) => (input.email !== undefined) !== (input.provider !== undefined || input.subject !== undefined),
    'send either email, or provider with subject',
  )
  .refine((input) => (input.provider === undefined) === (input.subject === undefined), 'provider and subject go together')

const batchSchema = z.strictObject({
  users: z
    .array(z.unknown())
    .min(1)
    .max(MAX_BATCH_USERS, `at most ${MAX_BATCH_USERS.toLocaleString('en')} rows`),
})

/** A pregenerated user as the admin API answers it. */
export type PregeneratedUser = { userId: string; organizationId: string; address: string; created: boolean }

/**
 * The user of an identity, created with its sub-organization and wallet if it has none yet (its
 * kms user holds no credential: the first sign-in registers its key). The same identity is the
 * same user, however many calls race on however many instances (store.pregenerate).
 */
export async function pregenerateUser(context: RouteContext, oauth: OAuth, input: UserInput): Promise<PregeneratedUser> {
  let kind: LoginKind
  let subject: string
  let label: string
  let endUser: EndUser
  let event: Record<string, unknown>
  if (input.email !== undefined) {
    kind = 'email'
    subject = input.email.toLowerCase()
    label = subject
    endUser = { userName: subject, userEmail: subject, apiKeys: [], authenticators: [], oauthProviders: [] }
    event = { email: subject }
  } else if (input.provider !== undefined) {
    const config = oauth.config(input.provider)
    if (!config) throw new ServerError(400, 'unknown_provider', `${oauth.displayName(input.provider)} sign-in is not configured`)
    kind = oauthLoginKind(input.provider)
    // As a sign-in records it: the ID token's issuer and subject.
    subject = `${config.issuer} ${input.subject}`
    label = `${oauth.displayName(input.provider)} · ${input.subject}`
    endUser = { userName: label, apiKeys: [], authenticators: [], oauthProviders: [] }
    event = { email: null, provider: input.provider, subject: input.subject }
  } else {
    kind = 'external'
    subject = input.externalId!
    label = subject
    endUser = { userName: `external ${subject}`, apiKeys: [], authenticators: [], oauthProviders: [] }
    event = { email: null, externalId: subject }
  }
  const row = { id: newLoginId(), kind, subject, label, kms_id: null, created_at: context.now() }
  const create = async () => {
    const made = await createAccountSubOrganization(context, subject, endUser)
    return { organizationId: made.subOrganizationId, userId: made.userId, address: made.address }
  }
  const data = { ...event, loginMethod: 'pregenerated' }
  const { login, created } = await context.store.pregenerate(row, create, data).catch((error: unknown) => {
    // A sign-up took the identity meanwhile: it is that user now.
    if (error instanceof LoginConflictError) return context.store.pregenerate(row, create, data)
    throw error
  })
  return { userId: login.user_id, organizationId: login.organization_id, address: login.address, created }
}

/**
 * Gives the user of an `externalId` a way in (how an `externalId` is claimed): a provider's
 * subject (the kms gets the identity from the first sign-in's ID token, as for a pregenerated
 * one). The app's backend vouches for the identity, as it does when it pregenerates one.
 */
async function addLogin(context: RouteContext, oauth: OAuth, input: z.infer<typeof loginSchema>) {
  const { store, now } = context
  const external = await store.login('external', input.externalId)
  if (!external) throw new ServerError(404, 'unknown_user', 'No user has this externalId; create it with POST /admin/users first')
  // An email is a way in that only the user's own key adds (user.ts): the delegated user sets none.
  if (input.email !== undefined)
    throw new ServerError(
      400,
      'email_by_user',
      'An email is linked by its user, signed in; pregenerate by email (POST /admin/users {email}) or vouch for a provider subject',
    )
  const config = oauth.config(input.provider!)
  if (!config) throw new ServerError(400, 'unknown_provider', `${oauth.displayName(input.provider!)} sign-in is not configured`)
  const row: LoginRow = {
    id: newLoginId(),
    organization_id: external.organization_id,
    user_id: external.user_id,
    address: external.address,
    created_at: now(),
    kind: oauthLoginKind(input.provider!),
    subject: `${config.issuer} ${input.subject}`,
    label: `${oauth.displayName(input.provider!)} · ${input.subject}`,
    kms_id: null,
  }
  // Nothing in the kms yet: the first sign-in's ID token records the identity there.
  const kms = async () => null
  const user = { userId: external.user_id, organizationId: external.organization_id, address: external.address }
  try {
    const linked = await store.linkLogin(row, kms)
    return { ...user, login: { id: linked.id, kind: linked.kind, label: linked.label }, created: true }
  } catch (error) {
    if (!(error instanceof LoginConflictError)) throw error
    if (error.owner === 'other') throw accountAlreadyLinked()
    const mine = (await store.login(row.kind, row.subject))!
    return { ...user, login: { id: mine.id, kind: mine.kind, label: mine.label }, created: false }
  }
}

/** A row's problem as the batch answers it. */
const rowError = (error: unknown) =>
  error instanceof ServerError ? { code: error.code, message: error.message } : { code: 'internal', message: 'Something went wrong on the server' }

/**
 * The admin API's users (on its bearer token, admin.ts):
 * - `POST /admin/users` `{email}` | `{provider, subject}` | `{externalId}` → 201
 *   `{userId, organizationId, address, created: true}`, or 200 with `created: false` for an
 *   identity that has a user already (the same user, never a second one);
 * - `POST /admin/users:batch` `{users: [...]}` (1 to 1,000 rows) → 200 `{results: [{index, ok,
 *   userId?, organizationId?, address?, created?, error?}]}` in row order: a malformed row gets its
 *   error (`{code, message}`) and creates nothing; more rows is 400 and nothing is created;
 * - `POST /admin/users/logins` `{externalId, email}` | `{externalId, provider, subject}` → 201
 *   `{userId, organizationId, address, login: {id, kind, label}}` (200 when the user has it
 *   already): how an `externalId`'s wallet is claimed; the first sign-in by that identity opens
 *   it. 404 `unknown_user`, 409 `account_already_linked` (another user's), 409
 *   `email_already_linked` (the user has another email).
 *
 * @example
 * adminUsers(admin, { context, oauth })
 */
export function adminUsers(admin: Hono, options: { context: RouteContext; oauth: OAuth; onError?: ((error: unknown) => void) | undefined }) {
  const { context, oauth } = options
  admin.post('/users', async (c: Context) => {
    const input = await readBody(c.req.raw, userSchema)
    const user = await pregenerateUser(context, oauth, input)
    return c.json(user, user.created ? 201 : 200)
  })
  admin.post('/users/logins', async (c: Context) => {
    const { created, ...answer } = await addLogin(context, oauth, await readBody(c.req.raw, loginSchema))
    return c.json(answer, created ? 201 : 200)
  })
  admin.post('/users:batch', async (c: Context) => {
    const { users } = await readBody(c.req.raw, batchSchema)
    const results: Record<string, unknown>[] = new Array(users.length)
    const valid: { index: number; input: UserInput }[] = []
    users.forEach((row, index) => {
      const parsed = userSchema.safeParse(row)
      if (parsed.success) valid.push({ index, input: parsed.data })
      else {
        const issue = parsed.error.issues[0]!
        results[index] = { index, ok: false, error: { code: 'invalid_request', message: `${issue.path.join('.') || 'row'}: ${issue.message}` } }
      }
    })
    let next = 0
    const worker = async () => {
      for (let entry = valid[next++]; entry; entry = valid[next++]) {
        try {
          results[entry.index] = { index: entry.index, ok: true, ...(await pregenerateUser(context, oauth, entry.input)) }
        } catch (error) {
          if (!(error instanceof ServerError)) options.onError?.(error)
          results[entry.index] = { index: entry.index, ok: false, error: rowError(error) }
        }
      }
    }
    await Promise.all(Array.from({ length: Math.min(BATCH_PARALLEL, valid.length) }, worker))
    return c.json({ results })
  })
}
