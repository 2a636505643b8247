import { custom, SettingsError } from '@latchkey/service'
import { envKek, type Kek } from './kek.js'
import { parsePkcs11Uri, pkcs11Kek } from './pkcs11.js'

/** `--kek`: `env` (the master key setting) or a `pkcs11:` URI (RFC 7512), checked when the settings are read. */
export const kekSetting = (flag = 'kek', env = 'LATCHKEY_KMS_KEK', what = 'The key-encryption key') =>
  custom<string>({
    flag,
    env,
    valueName: '<env|pkcs11:…>',
    description: `${what} that wraps the data keys sealing the rows: env (the master key) or an HSM key by RFC 7512 URI, pkcs11:token=<label>;object=<key label>?module-path=<module .so>&pin-source=file:<path> (a sensitive, non-extractable AES key). With a pkcs11: KEK the master key, if set, still opens rows sealed before data keys. Default: env.`,
    convert: (text, label) => {
      const value = text.trim()
      if (value === 'env') return value
      if (!value.startsWith('pkcs11:')) throw new SettingsError(`${label} must be env or a pkcs11: URI, got ${JSON.stringify(value)}`)
      parsePkcs11Uri(value, label)
      return value
    },
  })

/**
 * The KEK a `--kek` value names: the master key for `env` (required then), or the HSM key, logged
 * in to now; a wrong PIN or a missing token is a SettingsError.
 */
export async function openKek(kek: string, masterKey: Uint8Array | undefined, masterKeyLabel: string, kekLabel = '--kek'): Promise<Kek> {
  if (kek !== 'env') return pkcs11Kek(parsePkcs11Uri(kek, kekLabel))
  if (!masterKey) throw new SettingsError(`the data keys are wrapped by the master key (${kekLabel} env), which is not configured: set ${masterKeyLabel}`)
  return envKek(masterKey)
}
