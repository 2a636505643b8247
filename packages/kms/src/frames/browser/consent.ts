import { openFrameChannel, stringField } from './channel.js'
import { askUser } from './consentDialog.js'
import { INVALID_REQUEST_CODE, parseReviewAndStamp, REVIEW_AND_STAMP, USER_REJECTED } from './consentMessages.js'
import { assertPayloadMatches } from './consentPayload.js'
import { parseStampQuery, STAMP_QUERY } from './consentQuery.js'
import { FrameError } from './encoding.js'
import { applySettings, element, pageConfig, showRefusal } from './page.js'
import { reviewRequest } from './review/index.js'
import { signingKeyStore, stampWithSigningKey } from './signingKey.js'
import { frameStore } from './storage.js'

// The consent frame: holds the embedded wallet's signing key (non-extractable, in this origin's
// IndexedDB, one per parent origin) and stamps a request only after the user has seen it here and
// approved it with a trusted click. PUBLIC_KEY_READY carries the signing key's compressed public
// key (the form a kms API key takes); the parent registers that key and then asks
// REVIEW_AND_STAMP for each request (consentMessages.ts), or STAMP_QUERY for a read-only query
// (consentQuery.ts).

const config = pageConfig(document)
const log = (message: string) => console.warn(`[latchkey consent frame] ${message}`)
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

const { refused } = openFrameChannel({
  window,
  page: config.page,
  parentOrigins: config.parentOrigins,
  keys: signingKeyStore({ store: frameStore() }),
  log,
  handlers: {
    async [REVIEW_AND_STAMP](request, context) {
      if (seen.has(request.requestId)) throw new FrameError(`request id ${request.requestId} was already used`, INVALID_REQUEST_CODE)
      seen.add(request.requestId)
      const value = parseReviewAndStamp(request)
      assertPayloadMatches(value)
      const key = await context.embeddedKey()
      const review = await reviewRequest(value.request, { origin: context.parentOrigin, ...value.context })
      if (!(await askUser(elements, review, log))) throw new FrameError(USER_REJECTED.message, USER_REJECTED.code)
      return { type: 'STAMP', value: await stampWithSigningKey(key, value.payload) }
    },
    async [STAMP_QUERY](request, context) {
      const payload = parseStampQuery(request)
      return { type: 'STAMP', value: await stampWithSigningKey(await context.embeddedKey(), payload) }
    },
    APPLY_SETTINGS: async (request) => applySettings(stringField(request, 'value', 8192), { secret: elements.dialog, label: elements.title }),
  },
})
if (refused) showRefusal(refused)
