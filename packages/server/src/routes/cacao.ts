import { formatAuthMessage, parseDidPkh } from '@latchkey/walletconnect/cacao'
import type { Context } from 'hono'
import { z } from 'zod'
import { ServerError } from '../errors.js'
import { type RouteContext, readBody } from '../internal/context.js'
import { verifySiwe } from './siwe.js'

const text = (max: number) => z.string().min(1).max(max)

const cacaoSchema = z.object({
  cacao: z.object({
    h: z.object({ t: z.enum(['caip122', 'eip4361']) }),
    p: z.object({
      iss: text(256),
      domain: text(256),
      aud: text(2048),
      version: z.literal('1'),
      nonce: text(128),
      iat: text(64),
      nbf: text(64).optional(),
      exp: text(64).optional(),
      statement: z.string().max(4096).optional(),
      requestId: text(256).optional(),
      resources: z.array(text(4096)).max(100).optional(),
    }),
    s: z.object({
      t: z.enum(['eip191', 'eip1271', 'eip6492']),
      s: z
        .string()
        .max(32_768)
        .regex(/^0x(?:[0-9a-fA-F]{2})+$/, 'must be 0x-prefixed hex bytes'),
    }),
  }),
  walletKind: z.enum(['injected', 'walletConnect', 'embedded']).optional(),
})

/**
 * `POST /auth/cacao` `{cacao, walletKind?}` → the session, as `POST /auth/siwe` answers it. A
 * CACAO (CAIP-74) is what a wallet returns for WalletConnect's one-click sign-in: the EIP-4361
 * fields and the signer as `did:pkh:eip155:{chain}:{address}`. The message is rebuilt from them
 * exactly as the wallet showed it, then checked as any SIWE message: domain, URI, chain, nonce
 * (issued here, to this browser, once), times, and the signature (EOA, EIP-1271, EIP-6492).
 *
 * @example
 * app.post('/auth/cacao', cacao(context))
 */
export const cacao = (context: RouteContext) => async (c: Context) => {
  const input = await readBody(c.req.raw, cacaoSchema)
  const { p, s } = input.cacao
  let message: string
  try {
    if (parseDidPkh(p.iss).chainId.split(':')[0] !== 'eip155') throw new Error('not an eip155 signer')
    message = formatAuthMessage({ payload: p, iss: p.iss })
  } catch {
    throw new ServerError(400, 'invalid_message', `The CACAO's issuer ${p.iss} is not a did:pkh:eip155 account`)
  }
  return verifySiwe(c, context, { message, signature: s.s, ...(input.walletKind ? { walletKind: input.walletKind } : {}) })
}
