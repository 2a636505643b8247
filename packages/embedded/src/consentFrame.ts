import { ClientsNotFoundError, ProviderRpcError } from './errors.js'
import type { Stamper } from './sessionKeys.js'

// The app side of the consent frame (the kms's `/consent` page, on the frames origin): the frame
// holds the wallet's signing key and stamps a kms request only after the user approved it there.
// This mounts the frame as an overlay dialog that shows only while a review is pending, opens its
// channel (the @turnkey/iframe-stamper framing), and turns each request into a stamper for
// @turnkey/http. The page never holds anything that can stamp. Messages mirror the frame's
// packages/kms/src/frames/browser/consentMessages.ts.

/** A wallet request as the frame reviews it (the frame's review/types.ts `WalletRequest`). */
export type ConsentWalletRequest = {
  readonly method:
    | 'personal_sign'
    | 'eth_signTypedData_v4'
    | 'eth_sendTransaction'
    | 'wallet_sendCalls'
    | 'wallet_grantPermissions'
    | 'eip7702_authorization'
    | 'export_wallet'
    | 'add_credential'
    | 'add_account'
    | 'init_import'
    | 'import_wallet'
  readonly params: readonly unknown[]
}

/** What the frame shows with the request; the frame knows the app's origin itself. */
export type ConsentContext = { readonly account: `0x${string}`; readonly chainId: number }

export type ConsentFrameParameters = {
  /** The kms frames origin, e.g. `http://localhost:8091`; the frame is `${framesUrl}/consent`. */
  framesUrl: string
  /** Where the iframe goes. Default `document.body`. */
  container?: HTMLElement | undefined
  /** The iframe's accessible name. Default "Confirm in your wallet". */
  title?: string | undefined
  /**
   * The language of the frame's dialogs (a BCP 47 tag: `ar`, `pt-BR`), as the app shows its own. Default: the
   * browser's languages. One the frame has no catalogue for shows English (and the frame warns once).
   */
  locale?: string | undefined
}

export type ConsentFrame = {
  /** The frame's signing key, compressed hex: register it as the user's API key. */
  readonly publicKey: string
  /** The iframe, for tests and layout. */
  readonly iframe: HTMLIFrameElement
  /**
   * A stamper for @turnkey/http that asks the user to approve `request` in the frame, then stamps
   * the exact body it is given. Rejections are `ProviderRpcError` 4001.
   */
  stamper(request: ConsentWalletRequest, context: ConsentContext): Stamper
  /**
   * A stamper for read-only kms queries (`/public/v1/query/*`): the frame stamps them without a
   * prompt and refuses any body that carries an activity `type` or `parameters`.
   */
  readonly queryStamper: Stamper
  /**
   * Asks the user for the emailed code in the frame (`COLLECT_OTP`): the page hands over the kms's
   * target bundle and gets the code sealed to it, with the frame key's login signature, never the
   * code. Cancel is `ProviderRpcError` 4001.
   */
  collectOtp(value: CollectOtpValue): Promise<CollectedOtp>
  /**
   * A second factor enrolled (`ENROLL_TOTP`) or verified (`VERIFY_MFA`) in the frame: the frame
   * shows the secret, takes the codes and shows the recovery codes; the page only `carry`s its
   * stamped bodies to the kms and the kms's answers back (`MFA_SUBMIT` / `MFA_RESULT`), and is
   * answered `TOTP_ENROLLED {factorId}` or `MFA_VERIFIED {verified: true}`. Cancel is
   * `ProviderRpcError` 4001.
   */
  secondFactor(request: SecondFactorRequest, carry: (submit: MfaSubmit) => Promise<MfaCarried>): Promise<SecondFactorDone>
  /** The app's theme colours, through the frame's sanitised `APPLY_SETTINGS` (`{ styles: { color, backgroundColor, … } }`). */
  applySettings(settings: { styles?: Readonly<Record<string, string>> }): Promise<void>
  /** Forgets the frame's signing key (sign-out). */
  resetKey(): Promise<void>
  /** Forgets the frame's signing key and makes a new one (a sign-in registers it); answers its public key, as `publicKey` does from then on. */
  newKey(): Promise<string>
  /** Removes the frame; a pending review ends as rejected (4001). */
  close(): void
  /**
   * Asks the user to approve a `wallet_grantPermissions` request; once they did, the frame makes
   * the grant's key, names it in `payload` (create_grant, its key left empty) and stamps that
   * body, which it answers with the stamp. Rejections are `ProviderRpcError` 4001.
   */
  approveGrant(request: ConsentWalletRequest, context: ConsentContext, payload: string): Promise<StampedBody>
  /** Tells the frame the kms's id of the grant whose key is `publicKey`. */
  bindGrant(grantId: string, publicKey: string): Promise<void>
  /** A stamper that signs a transaction of the grant's account with the grant's key, with no prompt. */
  grantStamper(grantId: string): Stamper
  /** A stamper for revoke_grant of `grantId` (no prompt: it takes power away); the frame forgets the grant's key. */
  revokeStamper(grantId: string): Stamper
}

/** A body the frame wrote and its stamp. */
export type StampedBody = { readonly stamp: { stampHeaderName: string; stampHeaderValue: string }; readonly payload: string }
/** What COLLECT_OTP takes: init_otp V3's `otpEncryptionTargetBundle`, the email the dialog names, the otpId the bundle must name. */
export type CollectOtpValue = { readonly targetBundle: string; readonly email: string; readonly otpId?: string | undefined }

/** The frame's answer to COLLECT_OTP: what `/auth/email/verify` takes, and the key the login registers. */
export type CollectedOtp = {
  readonly encryptedOtpBundle: string
  readonly clientSignature: {
    readonly publicKey: string
    readonly scheme: 'CLIENT_SIGNATURE_SCHEME_API_P256'
    readonly message: string
    readonly signature: string
  }
  readonly publicKey: string
}

/** What the frame enrols or verifies in its own dialog (packages/kms/src/frames/browser/consentMfa.ts). */
export type SecondFactorRequest =
  | { readonly type: 'ENROLL_TOTP'; readonly value: { readonly organizationId: string; readonly userId: string } }
  | { readonly type: 'VERIFY_MFA'; readonly value: { readonly organizationId: string; readonly factorId: string } }
/** A body the frame wrote and stamped for the kms: the page posts it to `/public/v1/submit/{op}`. */
export type MfaSubmit = { readonly op: string; readonly body: string; readonly stampHeaderName: string; readonly stampHeaderValue: string }
/** The kms's answer to an {@link MfaSubmit}, as the page got it. */
export type MfaCarried = { readonly status: number; readonly body: unknown }
/** The frame's last answer: the enrolled factor, or that the session verified one. */
export type SecondFactorDone =
  | { readonly type: 'TOTP_ENROLLED'; readonly value: { factorId: string } }
  | { readonly type: 'MFA_VERIFIED'; readonly value: { verified: true } }

type Reply = { type: string; value: unknown; requestId?: string }

let frames = 0

/**
 * Mounts the consent frame and waits for its signing key.
 *
 * @example
 * const consent = await mountConsentFrame({ framesUrl: 'http://localhost:8091' })
 * const client = new TurnkeyClient({ baseUrl }, consent.stamper({ method: 'personal_sign', params: [hex, account] }, { account, chainId: 1 }))
 */
export async function mountConsentFrame(parameters: ConsentFrameParameters): Promise<ConsentFrame> {
  const url = new URL('/consent', parameters.framesUrl)
  if (parameters.locale) url.searchParams.set('locale', parameters.locale)
  if (url.protocol !== 'http:' && url.protocol !== 'https:')
    throw new ClientsNotFoundError({ details: `The frames url ${parameters.framesUrl} is not http(s)` })
  const iframe = document.createElement('iframe')
  iframe.id = `latchkey-consent-frame-${++frames}`
  iframe.title = parameters.title ?? 'Confirm in your wallet'
  iframe.src = url.href
  iframe.sandbox.add('allow-scripts', 'allow-same-origin')
  iframe.hidden = true
  Object.assign(iframe.style, {
    position: 'fixed',
    inset: '0',
    width: '100%',
    height: '100%',
    border: '0',
    zIndex: '2147483647',
    background: 'transparent',
    colorScheme: 'normal',
  })
  const channel = new MessageChannel()
  const pending = new Map<string, { resolve: (reply: Reply) => void; reject: (error: unknown) => void }>()
  let closed = false
  let ready: ((publicKey: string) => void) | undefined
  let failed: ((error: unknown) => void) | undefined
  const publicKey = new Promise<string>((resolve, reject) => {
    ready = resolve
    failed = reject
  })

  channel.port1.onmessage = (event: MessageEvent<Reply>) => {
    const reply = event.data
    if (reply.type === 'PUBLIC_KEY_READY') return ready?.(String(reply.value))
    const waiting = reply.requestId ? pending.get(reply.requestId) : undefined
    if (!waiting) return
    pending.delete(reply.requestId!)
    waiting.resolve(reply)
  }
  // A refusal from the frame (a foreign origin, a nested frame) comes on the window, not the port.
  const onRefusal = (event: MessageEvent) => {
    if (event.source !== iframe.contentWindow || event.origin !== url.origin) return
    const data = event.data as Reply
    if (data?.type === 'ERROR') failed?.(new ClientsNotFoundError({ details: `The consent frame refused: ${String(data.value)}` }))
  }
  window.addEventListener('message', onRefusal)
  iframe.addEventListener('load', () => iframe.contentWindow?.postMessage({ type: 'TURNKEY_INIT_MESSAGE_CHANNEL' }, url.origin, [channel.port2]), {
    once: true,
  })
  ;(parameters.container ?? document.body).append(iframe)

  async function ask(type: string, value: unknown): Promise<unknown> {
    return (await askReply(type, value)).value
  }

  /** The frame's whole answer to `type` (its type and value); an ERROR is thrown. */
  async function askReply(type: string, value: unknown): Promise<Reply> {
    if (closed) throw new ProviderRpcError(4001, 'User rejected the request.')
    const requestId = crypto.randomUUID()
    const reply = await new Promise<Reply>((resolve, reject) => {
      pending.set(requestId, { resolve, reject })
      channel.port1.postMessage({ type, requestId, value })
    })
    if (reply.type !== 'ERROR') return reply
    const error = reply.value as { code?: unknown; message?: unknown } | string
    if (typeof error === 'object' && error !== null && typeof error.code === 'number') throw new ProviderRpcError(error.code, String(error.message))
    throw new ProviderRpcError(-32603, `The consent frame refused: ${String(error)}`)
  }

  let reviews = 0
  const show = () => {
    reviews++
    iframe.hidden = false
    iframe.focus()
  }
  const hide = () => {
    if (--reviews === 0) iframe.hidden = true
  }

  let key: string
  try {
    key = await publicKey
  } finally {
    window.removeEventListener('message', onRefusal)
  }
  return {
    get publicKey() {
      return key
    },
    iframe,
    stamper(request, context) {
      return {
        async stamp(payload) {
          show()
          try {
            return (await ask('REVIEW_AND_STAMP', { request, payload, context })) as { stampHeaderName: string; stampHeaderValue: string }
          } finally {
            hide()
          }
        },
      }
    },
    queryStamper: {
      async stamp(payload) {
        return (await ask('STAMP_QUERY', { payload })) as { stampHeaderName: string; stampHeaderValue: string }
      },
    },
    async approveGrant(request, context, payload) {
      show()
      try {
        const { payload: body, ...stamp } = (await ask('REVIEW_AND_STAMP', { request, payload, context })) as {
          stampHeaderName: string
          stampHeaderValue: string
          payload: string
        }
        return { stamp, payload: body }
      } finally {
        hide()
      }
    },
    async collectOtp(value) {
      show()
      try {
        return (await ask('COLLECT_OTP', value)) as CollectedOtp
      } finally {
        hide()
      }
    },
    async secondFactor(request, carry) {
      show()
      try {
        let reply = await askReply(request.type, request.value)
        while (reply.type === 'MFA_SUBMIT') reply = await askReply('MFA_RESULT', await carry(reply.value as MfaSubmit))
        if (reply.type !== 'TOTP_ENROLLED' && reply.type !== 'MFA_VERIFIED') throw new ProviderRpcError(-32603, `The consent frame answered ${reply.type}`)
        return { type: reply.type, value: reply.value } as SecondFactorDone
      } finally {
        hide()
      }
    },
    async bindGrant(grantId, publicKey) {
      await ask('BIND_GRANT', { grantId, publicKey })
    },
    grantStamper(grantId) {
      return { stamp: async (payload) => (await ask('STAMP_WITH_GRANT', { grantId, payload })) as { stampHeaderName: string; stampHeaderValue: string } }
    },
    revokeStamper(grantId) {
      return { stamp: async (payload) => (await ask('REVOKE_GRANT', { grantId, payload })) as { stampHeaderName: string; stampHeaderValue: string } }
    },
    async applySettings(settings) {
      await ask('APPLY_SETTINGS', JSON.stringify(settings))
    },
    async resetKey() {
      await ask('RESET_EMBEDDED_KEY', undefined)
    },
    async newKey() {
      await ask('RESET_EMBEDDED_KEY', undefined)
      key = String(await ask('INIT_EMBEDDED_KEY', undefined))
      return key
    },
    close() {
      closed = true
      for (const waiting of pending.values()) waiting.reject(new ProviderRpcError(4001, 'User rejected the request.'))
      pending.clear()
      channel.port1.close()
      iframe.remove()
    },
  }
}
