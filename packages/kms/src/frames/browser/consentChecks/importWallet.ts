import { type Activity, assertType, isObject, unbound } from './activity.js'

// import_wallet: IMPORT_WALLET under the requested name, carrying the bundle the import window
// encrypted. The phrase is sealed to the kms in that window, so this frame cannot read it: it
// binds the name the dialog shows and requires a bundle, and the dialog says what it cannot show.

export function checkImport(activity: Activity, params: readonly unknown[]): undefined {
  assertType(activity, ['ACTIVITY_TYPE_IMPORT_WALLET'], 'a wallet import')
  const requested = isObject(params[0]) ? params[0] : {}
  if (typeof requested.walletName !== 'string' || requested.walletName === '') throw unbound("import_wallet needs the new wallet's name")
  const { walletName, encryptedBundle } = activity.parameters
  if (walletName !== requested.walletName)
    throw unbound(`the payload imports a wallet named ${JSON.stringify(walletName)}, not ${JSON.stringify(requested.walletName)}`)
  if (typeof encryptedBundle !== 'string' || encryptedBundle === '') throw unbound('the payload carries no encrypted bundle from the import window')
  return undefined
}

/** init_import: INIT_IMPORT_WALLET for a user (the kms finds the user only in the stamping user's own organization). */
export function checkInitImport(activity: Activity): undefined {
  assertType(activity, ['ACTIVITY_TYPE_INIT_IMPORT_WALLET'], 'the start of a wallet import')
  if (typeof activity.parameters.userId !== 'string' || activity.parameters.userId === '') throw unbound('the payload names no user to import for')
  return undefined
}
