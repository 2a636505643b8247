import type { Context } from 'hono'
import { getCookie } from 'hono/cookie'
import type { Hex } from 'viem'
import { verifyMessage } from 'viem/actions'
import { validateSiweMessage } from 'viem/siwe'
import { z } from 'zod'
import { ServerError } from '../errors.js'
import { type RouteContext, readBody, SESSION_COOKIE, sessionAnswer, startSession } from '../internal/context.js'
import { readSiweMessage, SIWE_COOKIE, SIWE_TIMES, type SiweFields } from '../internal/siwe.js'
import type { NonceRow } from '../store.js'

const siweSchema = z.object({
  message: z.string().min(1).max(8192),
  // 65 bytes for an EOA; EIP-1271 and EIP-6492 signatures are longer (a 6492 one carries its factory call).
  signature: z
    .string()
    .max(32_768)
    .regex(/^0x(?:[0-9a-fA-F]{2})+$/, 'must be 0x-prefixed hex bytes'),
  walletKind: z.enum(['injected', 'walletConnect', 'embedded']).optional(),
})

const invalidNonce = (reason: string) => new ServerError(401, 'invalid_nonce', reason)

/** Refuses a nonce this browser may not use: none asked for, unknown, another browser's, used, expired. */
function checkNonce(row: NonceRow | undefined, holder: string | undefined, at: number): asserts holder is string {
  if (!holder) throw invalidNonce('No nonce was issued to this browser; ask for one first (GET /auth/nonce)')
  if (!row) throw invalidNonce('This nonce was not issued here; ask for a new one')
  if (row.holder !== holder) throw invalidNonce('This nonce was issued to another browser')
  if (row.used_at !== null) throw invalidNonce('This nonce has been used; ask for a new one')
  if (row.expires_at <= at) throw invalidNonce('This nonce has expired; ask for a new one')
}

/**
 * `POST /auth/siwe` `{message, signature, walletKind?}` → the session (as `GET /auth/session`
 * answers it, kind `siwe`) and the session cookie. The EIP-4361 message must be for one of the
 * app's domains and origins and a configured chain, carry a nonce this browser was given and has
 * not used, be issued (give or take five minutes) and valid now; then the signature is verified by
 * the chain's public client: EOA, EIP-1271 contract wallets and EIP-6492 counterfactual wallets.
 * The nonce is spent as verification starts, so whatever the outcome it never verifies again.
 * A SIWE session of an embedded wallet this backend created carries its account, and so does one
 * of a wallet linked to an account (`POST /auth/user/link/wallet`); the session's address is the
 * wallet that signed.
 *
 * @example
 * app.post('/auth/siwe', siwe(context))
 */
export const siwe = (context: RouteContext) => async (c: Context) => verifySiwe(c, context, await readBody(c.req.raw, siweSchema))

/** The checks of `POST /auth/siwe` on a message and signature already read; `POST /auth/cacao` reuses them. @internal */
export async function verifySiwe(c: Context, context: RouteContext, input: z.infer<typeof siweSchema>) {
  const { store } = context
  const message = await checkSiwe(c, context, input)
  const walletKind = input.walletKind ?? null
  // An embedded wallet's session carries its account; so does a wallet linked to an account (issue 28).
  const linked = walletKind === 'embedded' ? undefined : await store.login('wallet', message.address)
  const account =
    walletKind === 'embedded'
      ? await store.accountByAddress(message.address)
      : linked && (await store.accountByOrganization(linked.organization_id).then((known) => known && { ...known, user_id: linked.user_id }))
  // One browser, one session: the one this replaces ends here.
  const previous = getCookie(c, SESSION_COOKIE)
  if (previous) await store.deleteSession(previous)
  const session = await startSession(
    c,
    context,
    {
      email: account?.email ?? null,
      organization_id: account?.organization_id ?? null,
      user_id: account?.user_id ?? null,
      address: message.address,
      chain_id: message.chainId,
      wallet_kind: walletKind,
    },
    'siwe',
    message.expirationTime?.getTime(),
  )
  return c.json(sessionAnswer(session))
}

/**
 * A SIWE message and its signature checked as `POST /auth/siwe` checks them (domain, uri, chain,
 * this browser's unused nonce, which it spends, times, the signature on the chain); answers the
 * message's fields. Linking a wallet reuses it. @internal
 */
export async function checkSiwe(c: Context, context: RouteContext, input: { message: string; signature: string }): Promise<SiweFields> {
  const { store, siwe: config } = context
  const message = readSiweMessage(input.message)
  if (!message) throw new ServerError(400, 'invalid_message', 'The message is not an EIP-4361 sign-in message')
  const domain = message.domain.toLowerCase()
  if (!config.domains.has(domain) || (message.scheme !== undefined && !config.uriOrigins.has(`${message.scheme.toLowerCase()}://${domain}`))) {
    throw new ServerError(400, 'wrong_domain', `The message is for ${message.scheme ? `${message.scheme}://` : ''}${message.domain}, not this app`)
  }
  if (!config.uriOrigins.has(new URL(message.uri).origin)) throw new ServerError(400, 'wrong_uri', `The message's URI ${message.uri} is not this app's`)
  const client = config.clients.get(message.chainId)
  if (!client) throw new ServerError(400, 'unsupported_chain', `Chain ${message.chainId} is not supported for sign-in here`)

  const at = context.now()
  const holder = getCookie(c, SIWE_COOKIE)
  checkNonce(await store.nonce(message.nonce), holder, at)
  if (message.issuedAt.getTime() > at + SIWE_TIMES.issuedAtSkewSeconds * 1000) {
    throw new ServerError(
      401,
      'issued_in_future',
      `The message says it was issued at ${message.issuedAt.toISOString()}, in the future; check the device's clock`,
    )
  }
  if (message.expirationTime && message.expirationTime.getTime() <= at) {
    throw new ServerError(401, 'message_expired', `The message expired at ${message.expirationTime.toISOString()}; sign in again`)
  }
  if (message.notBefore && message.notBefore.getTime() > at) {
    throw new ServerError(401, 'not_yet_valid', `The message is not valid before ${message.notBefore.toISOString()}`)
  }
  // viem's own reading of the message must agree with the checks above.
  if (!validateSiweMessage({ message, time: new Date(at) })) throw new ServerError(400, 'invalid_message', 'The message is not an EIP-4361 sign-in message')

  // Spent before the signature is checked, in one statement: a nonce verifies at most one signature.
  if (!(await store.spendNonce(message.nonce, holder, at))) throw invalidNonce('This nonce was just used by another request; ask for a new one')
  const unavailable = () => new ServerError(502, 'chain_unavailable', `Chain ${message.chainId} did not answer the signature check; sign in again`)
  const valid = await verifyMessage(client, { address: message.address, message: input.message, signature: input.signature as Hex }).catch(() => {
    throw unavailable()
  })
  if (!valid) {
    // viem answers false when the chain's RPC fails the call too: a refusal must not hide an outage.
    await client.getChainId().catch(() => {
      throw unavailable()
    })
    throw new ServerError(401, 'invalid_signature', `The signature is not ${message.address}'s signature of this message`)
  }
  return message
}
