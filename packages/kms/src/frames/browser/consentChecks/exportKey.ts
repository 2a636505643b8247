import { sameAddress } from '../review/format.js'
import { type Activity, assertType, type PayloadFacts, type PayloadSettings, unbound } from './activity.js'

// export_wallet: EXPORT_WALLET or EXPORT_WALLET_ACCOUNT, encrypted to `targetPublicKey`. Whoever
// holds that key reads the secret, so it must be the export frame's own key, which this origin
// keeps and the page cannot name; the frame reads it from its storage.

/** The compressed form of an uncompressed P-256 key in hex (02/03 by the parity of y, then x). */
function compressed(uncompressed: string): string {
  const y = uncompressed.slice(66)
  return `${Number.parseInt(y.slice(-1), 16) % 2 === 0 ? '02' : '03'}${uncompressed.slice(2, 66)}`
}

export function checkExport(activity: Activity, context: { account: string }, settings: PayloadSettings): PayloadFacts {
  const type = assertType(activity, ['ACTIVITY_TYPE_EXPORT_WALLET', 'ACTIVITY_TYPE_EXPORT_WALLET_ACCOUNT'], 'an export')
  const { targetPublicKey, address } = activity.parameters
  const key = settings.exportKey?.toLowerCase()
  if (!key || !/^04[0-9a-f]{128}$/.test(key)) throw unbound('there is no export frame to receive the export: open it first')
  const target = typeof targetPublicKey === 'string' ? targetPublicKey.toLowerCase() : ''
  if (target !== key && target !== compressed(key)) throw unbound('the export is encrypted to a key that is not the export frame’s')
  if (type === 'ACTIVITY_TYPE_EXPORT_WALLET_ACCOUNT' && (typeof address !== 'string' || !sameAddress(address, context.account)))
    throw unbound(`the export is of ${String(address)}, not of the account ${context.account}`)
  return {
    rows: [
      {
        label: 'Exports',
        value: type === 'ACTIVITY_TYPE_EXPORT_WALLET' ? 'the secret recovery phrase of the whole wallet' : 'the private key of this account',
      },
    ],
    warnings: [{ level: 'danger', text: 'It appears only in the export frame. Never type it into a site or share it: whoever has it takes everything.' }],
  }
}
