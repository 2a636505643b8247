import { type Credential, openCredentialBundle, stamp } from './bundles.js'
import { type FrameHandler, openFrameChannel, stringField } from './channel.js'
import { embeddedKeyStore } from './embeddedKey.js'
import { FrameError } from './encoding.js'
import { pageConfig, showRefusal } from './page.js'
import { frameStore } from './storage.js'

// The auth and recovery frames: open a credential bundle with the embedded key, keep the
// credential in memory only, and stamp requests with it for the embedding page.

const config = pageConfig(document)
let credential: Credential | undefined

const injectCredential: FrameHandler = async (request, context) => {
  credential = await openCredentialBundle(stringField(request, 'value', 4096), await context.embeddedKey())
  return { type: 'BUNDLE_INJECTED', value: true }
}

const { refused } = openFrameChannel({
  window,
  page: config.page,
  parentOrigins: config.parentOrigins,
  keys: embeddedKeyStore({ store: frameStore(), page: config.page }),
  onReset: () => {
    credential = undefined
  },
  handlers: {
    INJECT_CREDENTIAL_BUNDLE: injectCredential,
    // The name older iframe-stamper versions used.
    INJECT_RECOVERY_BUNDLE: injectCredential,
    async STAMP_REQUEST(request) {
      if (!credential) throw new FrameError('there is no credential to stamp with: inject a credential bundle first')
      return { type: 'STAMP', value: await stamp(credential, stringField(request, 'value', 1024 * 1024)) }
    },
  },
})
if (refused) showRefusal(refused)
