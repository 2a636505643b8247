import { readImportBundle, sealImportBundle } from './bundles.js'
import { openFrameChannel, stringField } from './channel.js'
import { embeddedKeyStore } from './embeddedKey.js'
import { type Bytes, FrameError } from './encoding.js'
import { applySettings, element, pageConfig, showingErrors, showRefusal } from './page.js'
import { keyFormatOf, parseMnemonic, parsePrivateKey } from './secrets.js'
import { frameStore } from './storage.js'

// The import frame: keeps the target key of a verified import bundle, lets the user type a
// secret recovery phrase or a private key, and hands the embedding page only that secret
// encrypted to the target key (the encryptedBundle of import_wallet / import_private_key).

const config = pageConfig(document)
const secret = element<HTMLTextAreaElement>('secret')
const label = element('secret-label')
const alert = element('error')
let target: Bytes | undefined

secret.addEventListener('input', () => {
  secret.removeAttribute('aria-invalid')
  alert.hidden = true
})

async function extract(parse: (text: string) => Bytes) {
  if (!target) throw new FrameError('there is no import bundle yet: inject one first')
  let plaintext: Bytes
  try {
    plaintext = parse(secret.value)
  } catch (error) {
    secret.setAttribute('aria-invalid', 'true')
    throw error
  }
  try {
    return { type: 'ENCRYPTED_BUNDLE_EXTRACTED', value: await sealImportBundle(target, plaintext) }
  } finally {
    plaintext.fill(0)
  }
}

const { refused } = openFrameChannel({
  window,
  page: config.page,
  parentOrigins: config.parentOrigins,
  keys: embeddedKeyStore({ store: frameStore(), page: config.page }),
  handlers: {
    INJECT_IMPORT_BUNDLE: showingErrors(alert, async (request) => {
      target = await readImportBundle({
        bundle: stringField(request, 'value'),
        organizationId: stringField(request, 'organizationId', 256),
        userId: stringField(request, 'userId', 256),
        signerPublicKeys: config.signerPublicKeys,
      })
      return { type: 'BUNDLE_INJECTED', value: true }
    }),
    EXTRACT_WALLET_ENCRYPTED_BUNDLE: showingErrors(alert, () => extract(parseMnemonic)),
    EXTRACT_KEY_ENCRYPTED_BUNDLE: showingErrors(alert, async (request) => {
      keyFormatOf(request.keyFormat)
      return extract(parsePrivateKey)
    }),
    APPLY_SETTINGS: async (request) => applySettings(stringField(request, 'value', 8192), { secret, label }),
  },
})
if (refused) showRefusal(refused)
