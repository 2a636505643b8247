// The consent frame's English texts, by key. Each locale's catalogue (locales/*.ts) is typed
// `FrameMessages`, so a key missing there fails the typecheck. `{name}` marks a value filled in at
// display time. The kms's error texts (the API's `error.message`) are not here: they reach the app
// as they are. These are the texts review/*.ts decodes into (bundled with the page, which needs
// them in English whatever the locale); the dialogs' own texts are in dialog.ts, a chunk of its
// own that downloads, like every other locale's catalogue, only when English is the active locale.

import type { dialog } from './dialog.js'
import type { values } from './valueTexts.js'

export const en = {
  // What a review decodes (review/*.ts writes these English texts; the dialog shows them translated).
  titleMessage: 'Sign a message',
  titleSiwe: 'Sign in with Ethereum',
  titleTypedData: 'Sign typed data',
  titlePermit: 'Sign a token permit',
  titleTransaction: 'Send a transaction',
  titleBatch: 'Send {count} calls at once',
  titleGrant: 'Grant a permission',
  titleAuthorization: 'Upgrade your account (EIP-7702)',
  titleExport: 'Export your wallet',
  titleCredential: 'Add a way to sign in',
  titleAccount: 'Add an account',
  titlePrepareImport: 'Prepare a wallet import',
  titleImport: 'Import a wallet',
  rowAccount: 'Account',
  rowNetwork: 'Network',
  rowChain: 'Chain',
  rowDomain: 'Domain',
  rowMessage: 'Message',
  rowMessageHex: 'Message (hex)',
  rowTo: 'To',
  rowValue: 'Value',
  rowTotalValue: 'Total value',
  rowNonce: 'Nonce',
  rowExpires: 'Expires',
  rowValidOn: 'Valid on',
  rowPermission: 'Permission',
  rowDelegateTo: 'Delegate to',
  rowNetworkFee: 'Network fee',
  rowFeeAtMost: 'Fee at most',
  rowContract: 'Contract',
  rowContractCreation: 'Contract creation',
  rowAction: 'Action',
  rowTransfer: 'Transfer',
  rowStatement: 'Statement',
  rowIssuedAt: 'Issued at',
  rowSigner: 'Signer',
  rowSigns: 'Signs',
  rowWallet: 'Wallet',
  rowAddress: 'Address',
  rowType: 'Type',
  rowPasskey: 'Passkey',
  rowUnknownCall: 'Unknown call',
  rowAllowedCall: 'Allowed call',
  rowCall: 'Call {index}',
  warnExport: 'Anyone who sees what is exported controls this wallet and everything in it.',
  warnCredential: 'The new sign-in method can use this wallet as you do.',
  warnImport: 'This window cannot see the phrase. Approve only an import you started, with a phrase you typed into the import window yourself.',
  warnNotText: 'This message is not text: it is shown as hex. Sign it only if you know what these bytes are.',
  warnHidden: 'This message contains invisible or direction-changing characters, shown as <U+…>: what it seems to say may not be what you sign.',
  warnEveryChain: 'This authorization is valid on every chain, not only this one.',
} as const

/** A catalogue: every key of the English texts, each a text with the same `{name}` values. */
export type FrameMessages = FrameTexts & FrameValueTexts
export type FrameMessageKey = keyof FrameMessages
/** A locale's own catalogue (locales/<locale>.ts): the decoded texts without values and the dialogs' texts. */
export type FrameTexts = { readonly [key in keyof typeof en | keyof typeof dialog]: string }
/** A locale's texts with values (locales/<locale>.values.ts; English's are valueTexts.ts), a chunk of its own that downloads with values.ts. */
export type FrameValueTexts = { readonly [key in keyof typeof values]: string }
