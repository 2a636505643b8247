import { bytesToHex } from './encoding.js'
import { compressedPoint } from './p256.js'
import type { FrameStore } from './storage.js'

// The consent frame's grant keys: one non-extractable ECDSA P-256 key per ERC-7715 grant the user
// approved here, kept in the frames origin's store beside the signing key, bound to the parent
// origin that asked, the account and chain the grant signs for, and the grant's expiry. The kms
// registers the key as the grant's (create_grant) and lets it sign only inside the grant's rule;
// the frame uses it only for a transaction of that account (consentGrants.ts). A reset of the
// signing key (the wallet's sign-out) forgets them all: the grants end with the session that made
// them, as the kms deletes their keys with the session's.

export type GrantKey = {
  readonly privateKey: CryptoKey
  /** Compressed, hex: the kms API key's public key. */
  readonly publicKeyHex: string
  readonly account: `0x${string}`
  readonly chainId: number
  /** Unix ms: the grant's expiry. */
  readonly expiresAt: number
  /** The kms's id of the grant, once the parent told it (BIND_GRANT). */
  readonly grantId?: string | undefined
}

export type GrantKeyStore = {
  /** A new key for a grant the user approved. */
  create(parentOrigin: string, grant: { account: `0x${string}`; chainId: number; expiresAt: number }): Promise<GrantKey>
  /** Names the grant of the key `publicKeyHex` (once: a bound key keeps its grant). */
  bind(parentOrigin: string, publicKeyHex: string, grantId: string): Promise<GrantKey | undefined>
  /** The unexpired key of `grantId`. */
  byGrant(parentOrigin: string, grantId: string): Promise<GrantKey | undefined>
  /** Forgets the key of `grantId`. */
  remove(parentOrigin: string, grantId: string): Promise<void>
  /** Forgets every grant key of `parentOrigin` (its session ended: the kms deleted them with it). */
  clear(parentOrigin: string): Promise<void>
}

/** The store entry of `parentOrigin`'s grant keys. */
export const grantKeysStorageKey = (parentOrigin: string) => `latchkey.frames.consent.grantKeys ${parentOrigin}`

const isGrantKey = (value: unknown): value is GrantKey => {
  const key = value as Partial<GrantKey> | undefined
  return (
    typeof key === 'object' &&
    key !== null &&
    key.privateKey instanceof CryptoKey &&
    typeof key.publicKeyHex === 'string' &&
    typeof key.account === 'string' &&
    typeof key.chainId === 'number' &&
    typeof key.expiresAt === 'number'
  )
}

/**
 * The consent frame's grant keys, per parent origin.
 *
 * @example
 * const keys = grantKeyStore({ store: frameStore() })
 * const key = await keys.create('https://app.example', { account, chainId: 31337, expiresAt })
 */
export function grantKeyStore(parameters: { store: FrameStore; now?: () => number }): GrantKeyStore {
  const { store } = parameters
  const now = parameters.now ?? Date.now
  /** The parent's unexpired keys (expired ones are dropped as they are read). */
  async function read(parentOrigin: string): Promise<GrantKey[]> {
    const stored = await store.get(grantKeysStorageKey(parentOrigin))
    return Array.isArray(stored) ? stored.filter(isGrantKey).filter((key) => key.expiresAt > now()) : []
  }
  const write = (parentOrigin: string, keys: readonly GrantKey[]) => store.put(grantKeysStorageKey(parentOrigin), keys)
  return {
    async create(parentOrigin, grant) {
      const pair = await crypto.subtle.generateKey({ name: 'ECDSA', namedCurve: 'P-256' }, false, ['sign'])
      const publicKey = new Uint8Array(await crypto.subtle.exportKey('raw', pair.publicKey))
      const key: GrantKey = { privateKey: pair.privateKey, publicKeyHex: bytesToHex(compressedPoint(publicKey)), ...grant }
      await write(parentOrigin, [...(await read(parentOrigin)), key])
      return key
    },
    async bind(parentOrigin, publicKeyHex, grantId) {
      const keys = await read(parentOrigin)
      const index = keys.findIndex((key) => key.publicKeyHex === publicKeyHex && key.grantId === undefined)
      if (index < 0 || keys.some((key) => key.grantId === grantId)) return undefined
      const bound = { ...keys[index]!, grantId }
      keys[index] = bound
      await write(parentOrigin, keys)
      return bound
    },
    async byGrant(parentOrigin, grantId) {
      return (await read(parentOrigin)).find((key) => key.grantId === grantId)
    },
    async remove(parentOrigin, grantId) {
      await write(
        parentOrigin,
        (await read(parentOrigin)).filter((key) => key.grantId !== grantId),
      )
    },
    async clear(parentOrigin) {
      await store.delete(grantKeysStorageKey(parentOrigin))
    },
  }
}
