import { participant } from './messages.js'
import { array, literal, number, object, optional, string, union } from './schema.js'

/*
 * The schemas of one-click sign-in's messages; with sign/auth.ts, they load on first use.
 *
 * @internal
 */

/** CAIP-122 fields, as they travel in `wc_sessionAuthenticate` and inside a CACAO. */
const authFields = {
  domain: string(),
  aud: string(),
  version: string(),
  nonce: string(),
  iat: string(),
  nbf: optional(string()),
  exp: optional(string()),
  statement: optional(string()),
  requestId: optional(string()),
  resources: optional(array(string(), { max: 100 })),
}

export const authenticateParams = object({
  authPayload: object({ type: optional(string()), chains: array(string(), { max: 100 }), ...authFields }),
  requester: participant,
  expiryTimestamp: number(),
})

export const cacao = object({
  h: object({ t: union(literal('caip122'), literal('eip4361')) }),
  p: object({ iss: string(), ...authFields }),
  s: object({ t: string(), s: string(), m: optional(string()) }),
})

export const authenticateResult = object({ cacaos: array(cacao, { max: 100 }), responder: participant })
