import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto'
import { GrpcCode, KmsError } from '../errors.js'
import type { DataKeyStatements } from '../storage/dataKeys.js'
import type { Kek } from './kek.js'

/** The first data key's id: fixed, so instances starting together on an empty database agree on it. */
export const FIRST_DATA_KEY_ID = 'dek_initial'

export type KeyringOptions = {
  store: DataKeyStatements
  kek: Kek
  /**
   * The 32-byte master key that sealed rows directly before data keys existed (the `v1:` format),
   * when it is configured: such rows still open until `keys rewrap` moved them to a data key.
   */
  legacyKey?: Uint8Array | undefined
  /**
   * How often the stored data keys are read again, so a key made by `keys rotate` elsewhere is
   * known here; a new key seals only once two intervals passed, when every instance has it. Default 5000 ms.
   */
  refreshMs?: number | undefined
  now?: (() => number) | undefined
}

/** What `keys status` shows of a data key. */
export type DataKeyInfo = { id: string; kekId: string; createdAt: number; loaded: boolean; active: boolean }

/**
 * The key hierarchy in one process: data keys (DEKs) seal and open the rows (secrets.ts), each
 * unwrapped once by the KEK and held in memory; the newest active one seals. Sealing and opening
 * are synchronous (activities call them inside their transactions); loading is not, so until
 * `load()` finished, or when a row names a data key not loaded yet, they refuse with `unavailable`
 * (503), never an internal error.
 *
 * @example
 * const keyring = createKeyring({ store: db.dataKeys, kek: envKek(masterKey), legacyKey: masterKey })
 * await keyring.load()
 * const sealed = keyring.seal(walletId, mnemonic)
 */
export function createKeyring(options: KeyringOptions) {
  const { store, kek } = options
  const now = options.now ?? Date.now
  const refreshMs = options.refreshMs ?? 5000
  const activationMs = 2 * refreshMs
  const keys = new Map<string, { key: Buffer; createdAt: number }>()
  let known: { id: string; kek_id: string; created_at: number }[] = []
  let loaded: Promise<void> | undefined
  let problem: string | undefined = 'the data keys are not loaded yet'
  let timer: NodeJS.Timeout | undefined

  async function refresh() {
    let rows = await store.dataKeys()
    if (!rows.length) {
      const key = randomBytes(32)
      await store.insertDataKey({
        id: FIRST_DATA_KEY_ID,
        kek_id: kek.id,
        wrapped: Buffer.from(await kek.wrap(FIRST_DATA_KEY_ID, key)).toString('base64'),
        created_at: 0,
      })
      key.fill(0)
      rows = await store.dataKeys()
    }
    for (const row of rows) {
      if (keys.has(row.id) || row.kek_id !== kek.id) continue
      keys.set(row.id, { key: Buffer.from(await kek.unwrap(row.id, Buffer.from(row.wrapped, 'base64'))), createdAt: Number(row.created_at) })
    }
    known = rows.map((row) => ({ ...row, created_at: Number(row.created_at) }))
    if (!keys.size)
      throw new KmsError(GrpcCode.unavailable, `no data key is wrapped by this KEK (${kek.id}): stored keys are wrapped by ${describeKeks(known)}`)
    problem = undefined
  }

  /** The newest data key that every instance has had time to load. */
  function current(): { id: string; key: Buffer } {
    let best: { id: string; key: Buffer; createdAt: number } | undefined
    for (const [id, entry] of keys)
      if (entry.createdAt + activationMs <= now() && (!best || entry.createdAt > best.createdAt || (entry.createdAt === best.createdAt && id > best.id)))
        best = { id, ...entry }
    if (!best) throw new KmsError(GrpcCode.unavailable, problem ?? 'no data key is active yet')
    return best
  }

  function keyFor(dekId: string): Buffer {
    const entry = keys.get(dekId)
    if (entry) return entry.key
    // Made elsewhere since the last refresh: read now, so the next try finds it.
    void refresh().catch(() => {})
    throw new KmsError(GrpcCode.unavailable, problem ?? `data key ${dekId} is not loaded yet: try again`)
  }

  return {
    kek,
    legacyKey: options.legacyKey,
    /** Loads (and on an empty database makes) the data keys, then rereads them every `refreshMs`. */
    load(): Promise<void> {
      loaded ??= refresh().then(() => {
        timer = setInterval(() => {
          refresh().catch((error: Error) => {
            problem = `the data keys could not be read again: ${error.message}`
          })
        }, refreshMs)
        timer.unref()
      })
      return loaded
    },
    /** Throws unless the data keys are loaded and the KEK answers: `/readyz`. */
    async ready() {
      if (!loaded) throw new Error('the data keys are not loaded yet')
      await loaded
      await kek.check()
      if (problem) throw new Error(problem)
    },
    /** Reads the stored data keys again now (rather than at the next interval). */
    refresh,
    /** The data key that seals now. */
    currentId: () => current().id,
    dataKeys: (): DataKeyInfo[] => {
      const active = keys.size ? safeCurrentId() : undefined
      return known.map((row) => ({ id: row.id, kekId: row.kek_id, createdAt: row.created_at, loaded: keys.has(row.id), active: row.id === active }))
    },
    /** Milliseconds until the newest data key seals (0 when it does). */
    untilNewestActive: () => Math.max(0, Math.max(0, ...[...keys.values()].map((entry) => entry.createdAt + activationMs)) - now()),
    /** AES-256-GCM under the active data key, bound to `recordId`: `v2:<data key id>:<base64 iv|ciphertext|tag>`. */
    seal(recordId: string, plaintext: string | Uint8Array): string {
      const { id, key } = current()
      return `v2:${id}:${encrypt(key, recordId, plaintext)}`
    },
    /** Opens what `seal` made (or the master key's `v1:` format, when it is configured); the caller zeroes the bytes. */
    openBytes(recordId: string, sealed: string): Buffer {
      if (sealed.startsWith('v2:')) {
        const split = sealed.indexOf(':', 3)
        if (split < 0) throw new KmsError(GrpcCode.internal, 'stored key material is damaged')
        return decrypt(keyFor(sealed.slice(3, split)), recordId, sealed.slice(split + 1))
      }
      if (!sealed.startsWith('v1:')) throw new KmsError(GrpcCode.internal, 'stored key material is damaged')
      if (!options.legacyKey)
        throw new KmsError(
          GrpcCode.unavailable,
          'stored key material is sealed by the master key, which is not configured: set it, or run `latchkey-kms keys rewrap` with it',
        )
      return decrypt(options.legacyKey, recordId, sealed.slice(3))
    },
    async close() {
      if (timer) clearInterval(timer)
      for (const entry of keys.values()) entry.key.fill(0)
      keys.clear()
      await kek.close()
    },
  }

  function safeCurrentId() {
    try {
      return current().id
    } catch {
      return undefined
    }
  }
}

export type Keyring = ReturnType<typeof createKeyring>

const describeKeks = (rows: readonly { kek_id: string }[]) => [...new Set(rows.map((row) => row.kek_id))].join(', ')

/** AES-256-GCM with `recordId` as associated data: base64 of iv, ciphertext and tag. */
export function encrypt(key: Uint8Array, recordId: string, plaintext: string | Uint8Array): string {
  const iv = randomBytes(12)
  const cipher = createCipheriv('aes-256-gcm', key, iv)
  cipher.setAAD(Buffer.from(recordId))
  const ciphertext = Buffer.concat([typeof plaintext === 'string' ? cipher.update(plaintext, 'utf8') : cipher.update(plaintext), cipher.final()])
  return Buffer.concat([iv, ciphertext, cipher.getAuthTag()]).toString('base64')
}

/** Undoes `encrypt`; unauthenticated plaintext is zeroed, never returned. */
export function decrypt(key: Uint8Array, recordId: string, text: string): Buffer {
  const bytes = Buffer.from(text, 'base64')
  if (bytes.length < 28) throw new KmsError(GrpcCode.internal, 'stored key material is damaged')
  const decipher = createDecipheriv('aes-256-gcm', key, bytes.subarray(0, 12))
  decipher.setAAD(Buffer.from(recordId))
  decipher.setAuthTag(bytes.subarray(bytes.length - 16))
  const head = decipher.update(bytes.subarray(12, bytes.length - 16))
  let tail: Buffer
  try {
    tail = decipher.final()
  } catch {
    head.fill(0)
    throw new KmsError(GrpcCode.internal, 'stored key material does not open with this master key')
  }
  if (!tail.length) return head
  const whole = Buffer.concat([head, tail])
  head.fill(0)
  return whole
}
