import { openExportBundle } from './bundles.js'
import { openFrameChannel, stringField } from './channel.js'
import { embeddedKeyStore } from './embeddedKey.js'
import { bytesToHex, FrameError, utf8Decode } from './encoding.js'
import { applySettings, element, pageConfig, showingErrors, showRefusal } from './page.js'
import { keyFormatOf } from './secrets.js'
import { frameStore } from './storage.js'

// The export frame: verifies an export bundle against the kms's signer key, opens it with the
// embedded key and shows the secret here only (the embedding page is told nothing but "done"),
// then forgets the embedded key so the bundle cannot be opened again.

const config = pageConfig(document)
const status = element('status')
const secret = element('secret')
const label = element('secret-label')
const words = element<HTMLOListElement>('words')
const key = element('key')
const alert = element('error')

function show(title: string, fill: () => void) {
  label.textContent = title
  words.replaceChildren()
  key.textContent = ''
  fill()
  words.hidden = words.childElementCount === 0
  key.hidden = key.textContent === ''
  status.textContent = 'Only you can see this. The app that opened it cannot.'
  secret.hidden = false
}

const { refused } = openFrameChannel({
  window,
  page: config.page,
  parentOrigins: config.parentOrigins,
  keys: embeddedKeyStore({ store: frameStore(), page: config.page }),
  handlers: {
    INJECT_WALLET_EXPORT_BUNDLE: showingErrors(alert, async (request, context) => {
      const plaintext = await openExportBundle({
        bundle: stringField(request, 'value'),
        organizationId: stringField(request, 'organizationId', 256),
        signerPublicKeys: config.signerPublicKeys,
        embeddedKey: await context.embeddedKey(),
      })
      let phrase: string[]
      try {
        phrase = utf8Decode(plaintext).trim().split(/\s+/)
      } catch {
        throw new FrameError('the wallet export does not hold a secret recovery phrase')
      } finally {
        plaintext.fill(0)
      }
      show('Secret recovery phrase', () => {
        for (const word of phrase) {
          const item = document.createElement('li')
          item.textContent = word
          words.append(item)
        }
      })
      await context.resetEmbeddedKey()
      return { type: 'BUNDLE_INJECTED', value: true }
    }),
    INJECT_KEY_EXPORT_BUNDLE: showingErrors(alert, async (request, context) => {
      keyFormatOf(request.keyFormat)
      const address = request.address === undefined ? undefined : stringField(request, 'address', 128)
      const plaintext = await openExportBundle({
        bundle: stringField(request, 'value'),
        organizationId: stringField(request, 'organizationId', 256),
        signerPublicKeys: config.signerPublicKeys,
        embeddedKey: await context.embeddedKey(),
      })
      if (plaintext.length !== 32) throw new FrameError('the key export does not hold a 32-byte private key')
      const hex = bytesToHex(plaintext)
      plaintext.fill(0)
      show(address ? `Private key of ${address}` : 'Private key', () => {
        key.textContent = hex
      })
      await context.resetEmbeddedKey()
      return { type: 'BUNDLE_INJECTED', value: true }
    }),
    APPLY_SETTINGS: async (request) => applySettings(stringField(request, 'value', 8192), { secret, label }),
  },
})
if (refused) showRefusal(refused)
