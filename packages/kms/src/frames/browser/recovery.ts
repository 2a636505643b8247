import { type Credential, openCredentialBundle, stamp } from './bundles.js'
import { openFrameChannel, stringField } from './channel.js'
import { embeddedKeyStore } from './embeddedKey.js'
import { FrameError } from './encoding.js'
import { applySettings, element, pageConfig, showingErrors, showRefusal } from './page.js'
import { recoveryStampRefusal } from './recoveryStamps.js'
import { signingKeyStore } from './signingKey.js'
import { frameStore } from './storage.js'

// The recovery frame (security review H1): the user pastes the code a recovery email carries into
// this frame's own box, never the app page. The code is a credential bundle encrypted to this
// frame's embedded key; the frame opens it when the page asks (OPEN_TYPED_CREDENTIAL, after the
// user's "Verify"), keeps the credential in memory only, and stamps with it only what a recovery
// needs (recoveryStamps.ts). A bundle the page sends itself (INJECT_CREDENTIAL_BUNDLE) is refused:
// a page that had the code could skip the user.

const config = pageConfig(document)
const code = element<HTMLTextAreaElement>('code')
const label = element('code-label')
const alert = element('error')
const store = frameStore()
const signingKeys = signingKeyStore({ store })
let credential: Credential | undefined

code.addEventListener('input', () => {
  code.removeAttribute('aria-invalid')
  alert.hidden = true
})

const refuseInjected = async () => {
  throw new FrameError('the recovery frame opens only the code typed into it')
}

const { refused } = openFrameChannel({
  window,
  page: config.page,
  parentOrigins: config.parentOrigins,
  keys: embeddedKeyStore({ store, page: config.page }),
  onReset: () => {
    credential = undefined
    code.value = ''
  },
  handlers: {
    INJECT_CREDENTIAL_BUNDLE: refuseInjected,
    INJECT_RECOVERY_BUNDLE: refuseInjected,
    OPEN_TYPED_CREDENTIAL: showingErrors(alert, async (_request, context) => {
      const typed = code.value.trim()
      if (typed === '') {
        code.setAttribute('aria-invalid', 'true')
        throw new FrameError('paste the code from the email')
      }
      try {
        credential = await openCredentialBundle(typed, await context.embeddedKey())
      } catch {
        code.setAttribute('aria-invalid', 'true')
        throw new FrameError('the code is invalid or expired')
      }
      code.value = ''
      return { type: 'BUNDLE_INJECTED', value: true }
    }),
    async STAMP_REQUEST(request, context) {
      if (!credential) throw new FrameError('there is no credential to stamp with: the user has not entered a code')
      const body = stringField(request, 'value', 1024 * 1024)
      const refusal = recoveryStampRefusal(body, (await signingKeys.get(context.parentOrigin))?.publicKeyHex)
      if (refusal) throw new FrameError(refusal)
      return { type: 'STAMP', value: await stamp(credential, body) }
    },
    APPLY_SETTINGS: async (request) => applySettings(stringField(request, 'value', 8192), { secret: code, label }),
  },
})
if (refused) showRefusal(refused)
