import type { Metadata, Session } from './types.js'

/*
 * One-click sign-in (`wc_sessionAuthenticate`, CAIP-222): the types both roles share.
 */

/** The CAIP-122 request the dapp sends; the wallet signs one message per chain from it. */
export type AuthPayload = {
  type?: string | undefined
  /** CAIP-2 chains the dapp accepts a signature for; the first is the one it prefers. */
  chains: string[]
  domain: string
  /** The URI the sign-in is for (SIWE `URI:`). */
  aud: string
  version: string
  nonce: string
  /** ISO 8601. */
  iat: string
  nbf?: string | undefined
  exp?: string | undefined
  statement?: string | undefined
  requestId?: string | undefined
  /** Per ReCaps, an `urn:recap:` entry comes last and lists the methods the session grants. */
  resources?: string[] | undefined
}

/** A signed CAIP-74 object capability: header, payload (with the signer as `iss`), signature. */
export type Cacao = {
  h: { t: 'caip122' | 'eip4361' }
  p: Omit<AuthPayload, 'chains' | 'type'> & {
    /** `did:pkh:eip155:{chain}:{address}`. */
    iss: string
  }
  s: { t: string; s: string; m?: string | undefined }
}

/** What a wallet hears in `session_authenticate`. */
export type AuthenticateRequest = {
  authPayload: AuthPayload
  requester: { publicKey: string; metadata: Metadata }
  /** Unix seconds. */
  expiryTimestamp: number
}

export type AuthenticateParameters = {
  /** CAIP-2 chains, eip155 only (SIWE); the first is preferred. */
  chains: string[]
  /** The dapp's host (SIWE `domain`). */
  domain: string
  /** The dapp's URI (SIWE `URI:`). */
  uri: string
  /** From the backend that will verify the CACAOs. */
  nonce: string
  statement?: string | undefined
  resources?: string[] | undefined
  /** Methods the session should grant; listed in a ReCap and asked for in the fallback proposal. */
  methods?: string[] | undefined
  /** Events for the fallback proposal. Default `chainChanged`, `accountsChanged`. */
  events?: string[] | undefined
  /** ISO 8601 expiry of the signed message (SIWE `Expiration Time`). */
  exp?: string | undefined
  nbf?: string | undefined
  requestId?: string | undefined
  /** Seconds the wallet has to answer the one-click request (and the fallback proposal). Default 300. */
  expiry?: number | undefined
  /** Asked for in the fallback proposal and kept on either session. */
  sessionProperties?: Record<string, string> | undefined
  signal?: AbortSignal | undefined
}

/**
 * How a one-click sign-in ended: `cacaos` when the wallet signed in one step, or none when it
 * approved the fallback proposal instead (then sign in with `personal_sign`).
 */
export type AuthenticateResult = { session: Session; cacaos?: Cacao[] | undefined }

/** @internal */
export type AuthRecord = {
  id: number
  role: 'dapp' | 'wallet'
  pairingTopic: string
  request: AuthenticateRequest
  /** Dapp: the key pair whose public half is `request.requester.publicKey`. */
  privateKey?: string | undefined
  /** Dapp: where the wallet answers, sha256 of the requester key. */
  responseTopic?: string | undefined
  /** Dapp: the fallback proposal's id. */
  fallbackId?: number | undefined
}
