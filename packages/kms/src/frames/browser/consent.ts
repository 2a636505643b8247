import { type FrameHandler, openFrameChannel, stringField } from './channel.js'
import { chainRpc, parseConsentConfig } from './consentConfig.js'
import { askUser, tellRefusal } from './consentDialog.js'
import { grantHandlers, stampNewGrant } from './consentGrants.js'
import { INVALID_REQUEST_CODE, parseReviewAndStamp, REVIEW_AND_STAMP, type ReviewAndStampValue, USER_REJECTED } from './consentMessages.js'
import { mfaHandlers } from './consentMfa.js'
import { COLLECT_OTP, collectOtp } from './consentOtp.js'
import { assertPayloadMatches } from './consentPayload.js'
import { parseStampQuery, STAMP_QUERY } from './consentQuery.js'
import { embeddedKeyStore } from './embeddedKey.js'
import { FrameError } from './encoding.js'
import { grantKeyStore } from './grantKeys.js'
import { resolveFrameLocale, translatePage, useFrameLocale } from './i18n/index.js'
import { applySettings, element, metaContent, pageConfig, showRefusal } from './page.js'
import { type Review, ReviewError, reviewRequest } from './review/index.js'
import { readToken } from './review/tokens.js'
import type { ReviewContext } from './review/types.js'
import { orderWarnings } from './review/warnings.js'
import { signingKeyStore, stampWithSigningKey } from './signingKey.js'
import { frameStore } from './storage.js'

// The consent frame: holds the embedded wallet's signing key (non-extractable, in this origin's
// IndexedDB, one per parent origin) and stamps a request only after the user has seen it here and
// approved it with a trusted click. PUBLIC_KEY_READY carries the signing key's compressed public
// key (the form a kms API key takes); the parent registers that key and then asks
// REVIEW_AND_STAMP for each request (consentMessages.ts), or STAMP_QUERY for a read-only query
// (consentQuery.ts).

const config = pageConfig(document)
const consentConfig = parseConsentConfig({
  chains: metaContent(document, 'latchkey-chains'),
  executor: metaContent(document, 'latchkey-executor'),
  paymasters: metaContent(document, 'latchkey-paymasters'),
  appName: metaContent(document, 'latchkey-app-name'),
})
/** The export frame's keys (same origin, same storage): an export may only be encrypted to its key. */
const exportKeys = embeddedKeyStore({ store: frameStore(), page: 'export' })
/** The keys of the grants approved here (consentGrants.ts): the only silent signing. */
const grantKeys = grantKeyStore({ store: frameStore() })
const log = (message: string) => console.warn(`[latchkey consent frame] ${message}`)
/**
 * The app's locale (`?locale=`, as the embedded package opens the frame), else the browser's: its
 * catalogue downloads now, and every dialog waits for it (English, bundled, at once).
 */
const localeReady = useFrameLocale(
  resolveFrameLocale(new URLSearchParams(location.search).get('locale'), navigator.languages?.length ? navigator.languages : [navigator.language], log),
)
  .catch(() => log('the locale catalogue did not load; showing English'))
  .then(() => translatePage(document))
const elements = {
  dialog: element('review'),
  title: element('review-title'),
  origin: element('review-origin'),
  warnings: element('review-warnings'),
  rows: element('review-rows'),
  tree: element('review-tree'),
  rawBox: element<HTMLDetailsElement>('review-raw-box'),
  raw: element('review-raw'),
  simulation: element('review-simulation'),
  refusal: element('review-refusal'),
  approve: element<HTMLButtonElement>('approve'),
  reject: element<HTMLButtonElement>('reject'),
}
/** Every request id this frame has been asked, so an id is answered (and approved) at most once. */
const seen = new Set<string>()
/** Closes the refusal the dialog still shows, if any, before the next request. */
let closeRefusal = () => {}

const { refused } = openFrameChannel({
  window,
  page: config.page,
  parentOrigins: config.parentOrigins,
  keys: signingKeyStore({ store: frameStore() }),
  // A reset is the wallet's sign-out (or a new sign-in): the grants of the session end with it.
  onReset: (parentOrigin) => grantKeys.clear(parentOrigin),
  log,
  handlers: {
    async [REVIEW_AND_STAMP](request, context) {
      if (seen.has(request.requestId)) throw new FrameError(`request id ${request.requestId} was already used`, INVALID_REQUEST_CODE)
      seen.add(request.requestId)
      await localeReady
      closeRefusal()
      let review: Review
      let payload: string
      let value: ReviewAndStampValue
      let reviewContext: ReviewContext
      try {
        value = parseReviewAndStamp(request)
        payload = value.payload
        const exportKey = value.request.method === 'export_wallet' ? (await exportKeys.get(context.parentOrigin))?.publicKeyHex : undefined
        const facts = assertPayloadMatches(value, { executor: consentConfig.executor, exportKey })
        const rpc = chainRpc(consentConfig, value.request.method, value.context.chainId)
        reviewContext = {
          origin: context.parentOrigin,
          ...value.context,
          rpc,
          executor: consentConfig.executor,
          paymasters: consentConfig.paymasters.get(value.context.chainId),
          appName: consentConfig.appName,
        }
        const decoded = await reviewRequest(value.request, reviewContext)
        review = { ...decoded, rows: [...decoded.rows, ...(facts?.rows ?? [])], warnings: orderWarnings([...decoded.warnings, ...(facts?.warnings ?? [])]) }
      } catch (error) {
        // Refused before anything could be approved: the parent gets the typed error at once,
        // and the dialog says why until the user closes it or the next request comes.
        const refusal = error instanceof ReviewError ? new FrameError(error.message, INVALID_REQUEST_CODE) : error
        if (refusal instanceof FrameError) closeRefusal = tellRefusal(elements, context.parentOrigin, refusal.message)
        throw refusal
      }
      const key = await context.embeddedKey()
      if (!(await askUser(elements, review, log))) throw new FrameError(USER_REJECTED.message, USER_REJECTED.code)
      if (value.request.method === 'wallet_grantPermissions')
        return {
          type: 'STAMP',
          value: await stampNewGrant(value, {
            sessionKey: key,
            grantKeys,
            parentOrigin: context.parentOrigin,
            // The review's own reads (cached per context): the grant is labelled as the user saw it.
            readToken: (token) => readToken(reviewContext, token),
          }),
        }
      return { type: 'STAMP', value: await stampWithSigningKey(key, payload) }
    },
    async [STAMP_QUERY](request, context) {
      const payload = parseStampQuery(request)
      return { type: 'STAMP', value: await stampWithSigningKey(await context.embeddedKey(), payload) }
    },
    ...grantHandlers(grantKeys),
    ...afterLocale({
      [COLLECT_OTP]: collectOtp({ signerPublicKeys: config.signerPublicKeys, log, before: () => closeRefusal() }),
      ...mfaHandlers({
        signerPublicKeys: config.signerPublicKeys,
        codeKey: metaContent(document, 'latchkey-mfa-code-key'),
        log,
        before: () => closeRefusal(),
      }),
    }),
    APPLY_SETTINGS: async (request) => applySettings(stringField(request, 'value', 8192), { secret: elements.dialog, label: elements.title }),
  },
})
if (refused) showRefusal(refused)

/** The handlers, each once the locale's catalogue is in: their dialogs speak it from the first text. */
function afterLocale(handlers: Readonly<Record<string, FrameHandler>>): Record<string, FrameHandler> {
  return Object.fromEntries(
    Object.entries(handlers).map(([type, handler]): [string, FrameHandler] => [
      type,
      async (request, context) => {
        await localeReady
        return handler(request, context)
      },
    ]),
  )
}
