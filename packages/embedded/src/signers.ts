// What stamps the wallet's kms requests: the consent frame in a browser, a plain key in Node tests.
import type {
  CollectedOtp,
  CollectOtpValue,
  ConsentContext,
  ConsentFrame,
  ConsentWalletRequest,
  MfaCarried,
  MfaSubmit,
  SecondFactorDone,
  SecondFactorRequest,
  StampedBody,
} from './consentFrame.js'
import { ClientsNotFoundError } from './errors.js'
import type { SessionKeyStore, Stamper } from './sessionKeys.js'

/**
 * What stamps the wallet's kms requests. In a browser, the consent frame: its key is the session
 * key, and it stamps an activity only after the user approved the request there.
 */
export type WalletSigner = {
  /** A new key for a sign-in to register (the old one is forgotten): compressed P-256 hex. */
  newKey(): Promise<string>
  /** The key that stamps now, if there is one. */
  currentKey(): Promise<string | undefined>
  /** Stamps read-only queries, with no prompt. */
  readonly query: Stamper
  /** Stamps an activity once the user approved `request` (EIP-1193 4001 when they reject). */
  approve(request: ConsentWalletRequest, context: ConsentContext): Stamper
  /** Forgets the key (sign-out). */
  reset(): Promise<void>
  /** ERC-7715 grants, whose keys the consent frame makes and keeps; absent for the Node tests' signer. */
  readonly grants?: {
    /** The user approves the grant; the frame names its new key in `payload` and stamps it. */
    approve(request: ConsentWalletRequest, context: ConsentContext, payload: string): Promise<StampedBody>
    bind(grantId: string, publicKey: string): Promise<void>
    /** Stamps a transaction of the grant's account with the grant's key, with no prompt. */
    stamper(grantId: string): Stamper
    /** Stamps revoke_grant of the grant (no prompt: it takes power away) and forgets its key. */
    revoker(grantId: string): Stamper
  }
  /** The emailed code, typed by the user where the key is and sealed there to the kms (COLLECT_OTP). */
  collectOtp(value: CollectOtpValue): Promise<CollectedOtp>
  /** A second factor enrolled or verified where the key is (ENROLL_TOTP, VERIFY_MFA); the page carries bodies and answers. */
  secondFactor(request: SecondFactorRequest, carry: (submit: MfaSubmit) => Promise<MfaCarried>): Promise<SecondFactorDone>
}

/** The consent frame as the signer, mounted on first need from the frames url (its module loads then too), its dialogs in `locale`. */
export function consentSigner(framesUrl: () => Promise<string | undefined>, locale?: string | (() => string | undefined) | undefined): WalletSigner {
  let frame: Promise<ConsentFrame> | undefined
  const mounted = (): Promise<ConsentFrame> => {
    frame ??= (async () => {
      const url = await framesUrl()
      if (!url) throw new ClientsNotFoundError({ details: 'No frames url for the consent frame: set framesUrl, or have the backend publish one' })
      const { mountConsentFrame } = await import('./consentFrame.js')
      return mountConsentFrame({ framesUrl: url, locale: typeof locale === 'function' ? locale() : locale })
    })()
    frame.catch(() => (frame = undefined))
    return frame
  }
  return {
    newKey: async () => (await mounted()).newKey(),
    currentKey: async () => (await mounted()).publicKey,
    query: { stamp: async (payload) => (await mounted()).queryStamper.stamp(payload) },
    approve: (request, context) => ({ stamp: async (payload) => (await mounted()).stamper(request, context).stamp(payload) }),
    reset: async () => (await mounted()).resetKey(),
    grants: {
      approve: async (request, context, payload) => (await mounted()).approveGrant(request, context, payload),
      bind: async (grantId, publicKey) => (await mounted()).bindGrant(grantId, publicKey),
      stamper: (grantId) => ({ stamp: async (payload) => (await mounted()).grantStamper(grantId).stamp(payload) }),
      revoker: (grantId) => ({ stamp: async (payload) => (await mounted()).revokeStamper(grantId).stamp(payload) }),
    },
    collectOtp: async (value) => (await mounted()).collectOtp(value),
    secondFactor: async (request, carry) => (await mounted()).secondFactor(request, carry),
  }
}

/** Node tests' signer: a plain key that stamps everything, with nobody asked. */
export function testOnlySigner(keys: SessionKeyStore): WalletSigner {
  return {
    newKey: () => keys.create(),
    currentKey: () => keys.publicKey(),
    query: keys.stamper,
    approve: () => keys.stamper,
    reset: () => keys.clear(),
    collectOtp: async (value) => {
      if (!keys.collectOtp) throw new ClientsNotFoundError({ details: 'testOnlySessionKeys has no collectOtp: it cannot take an emailed code' })
      return keys.collectOtp(value)
    },
    secondFactor: async (request, carry) => {
      if (!keys.secondFactor) throw new ClientsNotFoundError({ details: 'testOnlySessionKeys has no secondFactor: it cannot take a second factor' })
      return keys.secondFactor(request, carry)
    },
  }
}
