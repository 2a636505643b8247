import { randomBytes } from 'node:crypto'
import { readFileSync } from 'node:fs'
import { SettingsError } from '@latchkey/service'
import { type Kek, KekError, wrapContext } from './kek.js'

/** What a `pkcs11:` URI (RFC 7512) names: the token and key object, the module and where its PIN is. */
export type Pkcs11Uri = { token: string; object: string; modulePath: string; pinFile: string }

const PATH_ATTRIBUTES = new Set([
  'token',
  'object',
  'type',
  'id',
  'manufacturer',
  'model',
  'serial',
  'library-manufacturer',
  'library-description',
  'library-version',
])

/**
 * Reads a `--kek` PKCS#11 URI: `pkcs11:token=<label>;object=<key label>?module-path=<.so>&pin-source=file:<path>`.
 * The PIN only comes from a file (`pin-value` would put it in the process list and the logs).
 *
 * @example
 * parsePkcs11Uri('pkcs11:token=latchkey;object=kek?module-path=/usr/lib/softhsm/libsofthsm2.so&pin-source=file:/run/secrets/pin')
 */
export function parsePkcs11Uri(uri: string, label = '--kek'): Pkcs11Uri {
  const refuse = (why: string): never => {
    throw new SettingsError(`${label} is not a usable PKCS#11 URI (${why}): expected pkcs11:token=…;object=…?module-path=…&pin-source=file:…`)
  }
  if (!uri.startsWith('pkcs11:')) refuse('it does not start with pkcs11:')
  const [path = '', query = '', ...rest] = uri.slice('pkcs11:'.length).split('?')
  if (rest.length) refuse('more than one ?')
  const attributes = new Map<string, string>()
  const read = (part: string, separator: string, known: (name: string) => boolean) => {
    for (const pair of part ? part.split(separator) : []) {
      const equals = pair.indexOf('=')
      const name = pair.slice(0, equals)
      if (equals <= 0 || !known(name)) refuse(`unknown or empty attribute ${JSON.stringify(pair)}`)
      if (attributes.has(name)) refuse(`${name} is given twice`)
      let value: string
      try {
        value = decodeURIComponent(pair.slice(equals + 1))
      } catch {
        return refuse(`${name} is not percent-encoded properly`)
      }
      attributes.set(name, value)
    }
  }
  read(path, ';', (name) => PATH_ATTRIBUTES.has(name))
  read(query, '&', (name) => name === 'module-path' || name === 'pin-source' || name === 'pin-value')
  if (attributes.has('pin-value')) refuse('pin-value puts the PIN in the settings: use pin-source=file:<path>')
  const type = attributes.get('type')
  if (type !== undefined && type !== 'secret-key') refuse(`type=${type}: the KEK is a secret key`)
  const required = (name: string) => attributes.get(name) || refuse(`${name} is missing`)
  const pinSource = required('pin-source')
  if (!pinSource.startsWith('file:')) refuse('pin-source must be file:<path>')
  return { token: required('token'), object: required('object'), modulePath: required('module-path'), pinFile: pinSource.slice('file:'.length) }
}

/** The URI without its query (module and PIN file): the KEK's id, stored beside what it wraps. */
export const pkcs11KekId = (uri: Pkcs11Uri) => `pkcs11:token=${encodeURIComponent(uri.token)};object=${encodeURIComponent(uri.object)}`

type Pkcs11Module = typeof import('pkcs11js')
type Loaded = { binding: Pkcs11Module; module: InstanceType<Pkcs11Module['PKCS11']>; release(): void }

/** A module is initialized once per process (C_Initialize), shared by the KEKs using it, finalized with the last. */
const modules = new Map<string, { loaded: Omit<Loaded, 'release'>; users: number }>()

/**
 * Loads (once) and initializes the PKCS#11 module at `modulePath` through pkcs11js, the optional
 * dependency, imported only here; `release()` when done.
 */
export async function loadPkcs11Module(modulePath: string): Promise<Loaded> {
  let entry = modules.get(modulePath)
  if (!entry) {
    let binding: Pkcs11Module
    try {
      const imported = (await import('pkcs11js')) as Pkcs11Module & { default?: Pkcs11Module }
      binding = imported.default ?? imported
    } catch (error) {
      throw new SettingsError(`a pkcs11: KEK needs the optional dependency pkcs11js, which did not load: ${(error as Error).message}`)
    }
    const module = new binding.PKCS11()
    try {
      module.load(modulePath)
      module.C_Initialize()
    } catch (error) {
      throw new SettingsError(`the PKCS#11 module ${modulePath} does not load: ${(error as Error).message}`)
    }
    entry = modules.get(modulePath) ?? { loaded: { binding, module }, users: 0 }
    modules.set(modulePath, entry)
  }
  const current = entry
  current.users++
  let released = false
  return {
    ...current.loaded,
    release() {
      if (released) return
      released = true
      if (--current.users > 0) return
      modules.delete(modulePath)
      current.loaded.module.C_Finalize()
    },
  }
}

/**
 * A KEK that stays in an HSM: an AES key found by token and object label, which must be sensitive
 * and not extractable; data keys are wrapped and unwrapped inside the token (AES-GCM, the data
 * key's id as associated data). Logs in once; a wrong PIN, a missing token or key, or a module that
 * does not load is a SettingsError (the bin exits 2 with one line before it listens).
 * pkcs11js (an optional dependency) is loaded only here.
 *
 * @example
 * const kek = await pkcs11Kek(parsePkcs11Uri(values.kek))
 */
export async function pkcs11Kek(uri: Pkcs11Uri): Promise<Kek> {
  let pin: string
  try {
    pin = readFileSync(uri.pinFile, 'utf8').trim()
  } catch (error) {
    throw new SettingsError(`the PKCS#11 PIN file ${uri.pinFile} cannot be read: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`)
  }
  const loaded = await loadPkcs11Module(uri.modulePath)
  const { binding, module } = loaded
  const name = pkcs11KekId(uri)
  try {
    const slot = module.C_GetSlotList(true).find((candidate) => module.C_GetTokenInfo(candidate).label.trim() === uri.token)
    if (slot === undefined) throw new SettingsError(`the PKCS#11 token "${uri.token}" is not present in ${uri.modulePath}`)
    const session = module.C_OpenSession(slot, binding.CKF_SERIAL_SESSION | binding.CKF_RW_SESSION)
    try {
      module.C_Login(session, binding.CKU_USER, pin)
    } catch (error) {
      const code = (error as { code?: number }).code
      if (code === binding.CKR_PIN_INCORRECT || code === binding.CKR_PIN_LEN_RANGE) throw new SettingsError(`the PIN for PKCS#11 token "${uri.token}" is wrong`)
      if (code === binding.CKR_PIN_LOCKED) throw new SettingsError(`the PIN of PKCS#11 token "${uri.token}" is locked`)
      if (code !== binding.CKR_USER_ALREADY_LOGGED_IN) throw error
    }
    module.C_FindObjectsInit(session, [
      { type: binding.CKA_CLASS, value: binding.CKO_SECRET_KEY },
      { type: binding.CKA_LABEL, value: uri.object },
    ])
    const found = module.C_FindObjects(session, 2)
    module.C_FindObjectsFinal(session)
    if (found.length !== 1)
      throw new SettingsError(`${found.length ? 'more than one' : 'no'} secret key is labelled "${uri.object}" on PKCS#11 token "${uri.token}"`)
    const key = found[0]!
    const [extractable, sensitive] = module.C_GetAttributeValue(session, key, [{ type: binding.CKA_EXTRACTABLE }, { type: binding.CKA_SENSITIVE }])
    if (extractable?.value?.[0] !== 0 || sensitive?.value?.[0] !== 1)
      throw new SettingsError(`the key "${uri.object}" on PKCS#11 token "${uri.token}" must be sensitive and not extractable`)

    const gcm = (dekId: string, iv: Buffer) => ({
      mechanism: binding.CKM_AES_GCM,
      parameter: { type: binding.CK_PARAMS_AES_GCM, iv, aad: wrapContext(dekId), ivBits: 96, tagBits: 128 },
    })
    let closed = false
    return {
      id: name,
      async wrap(dekId, dek) {
        const iv = randomBytes(12)
        module.C_EncryptInit(session, gcm(dekId, iv) as never, key)
        const out = module.C_Encrypt(session, Buffer.from(dek), Buffer.alloc(dek.length + 16))
        return Buffer.concat([iv, out])
      },
      async unwrap(dekId, wrapped) {
        const bytes = Buffer.from(wrapped)
        if (bytes.length < 28) throw new KekError(`data key ${dekId} is damaged`)
        module.C_DecryptInit(session, gcm(dekId, bytes.subarray(0, 12)) as never, key)
        try {
          return Buffer.from(module.C_Decrypt(session, bytes.subarray(12), Buffer.alloc(bytes.length)))
        } catch (error) {
          throw new KekError(`data key ${dekId} does not unwrap with ${name}: ${(error as Error).message}`)
        }
      },
      async check() {
        if (closed) throw new Error(`the PKCS#11 session of ${name} is closed`)
        try {
          module.C_GetSessionInfo(session)
          module.C_GetAttributeValue(session, key, [{ type: binding.CKA_LABEL }])
        } catch (error) {
          throw new Error(`the PKCS#11 token "${uri.token}" does not answer: ${(error as Error).message}`)
        }
      },
      async close() {
        if (closed) return
        closed = true
        try {
          module.C_CloseSession(session)
        } catch {
          // A token that went away took the session with it: nothing is left to close, and stopping must not fail.
        } finally {
          loaded.release()
        }
      },
    }
  } catch (error) {
    loaded.release()
    if (error instanceof SettingsError) throw error
    throw new SettingsError(`the PKCS#11 token "${uri.token}" cannot be used: ${(error as Error).message}`)
  }
}
