import { en } from '../i18n/en.js'
import { formatDate } from '../review/format.js'
import type { ReviewRow } from '../review/types.js'
import { type Activity, assertType, isObject, type PayloadFacts, unbound } from './activity.js'

// add_credential: CREATE_API_KEYS_V2, CREATE_AUTHENTICATORS_V2 or UPDATE_USER_EMAIL (a linked
// email: its codes sign in). The new key, passkey or email can act as the user, so the dialog
// shows each one the payload adds and when it expires.

const DURATION_UNITS = [
  [86_400, 'day'],
  [3_600, 'hour'],
  [60, 'minute'],
] as const

function lifetime(seconds: bigint, now: number): string {
  for (const [unit, name] of DURATION_UNITS)
    if (seconds >= BigInt(unit)) {
      const count = seconds / BigInt(unit)
      return `expires after ${count} ${name}${count === 1n ? '' : 's'} (${formatDate(BigInt(Math.floor(now / 1000)) + seconds)})`
    }
  return `expires after ${seconds} seconds`
}

export function checkCredential(activity: Activity, now: number = Date.now()): PayloadFacts {
  const type = assertType(
    activity,
    ['ACTIVITY_TYPE_CREATE_API_KEYS_V2', 'ACTIVITY_TYPE_CREATE_AUTHENTICATORS_V2', 'ACTIVITY_TYPE_UPDATE_USER_EMAIL'],
    'a new credential',
  )
  const rows: ReviewRow[] = []
  if (type === 'ACTIVITY_TYPE_UPDATE_USER_EMAIL') {
    const { userEmail } = activity.parameters
    if (typeof userEmail !== 'string' || userEmail === '') throw unbound('the payload sets no email')
    rows.push({ label: 'Sign-in email', value: `${userEmail}: codes sent there sign in to this wallet` })
  } else if (type === 'ACTIVITY_TYPE_CREATE_API_KEYS_V2') {
    const { apiKeys } = activity.parameters
    if (!Array.isArray(apiKeys) || apiKeys.length === 0) throw unbound('the payload adds no API key')
    for (const key of apiKeys) {
      if (!isObject(key) || typeof key.apiKeyName !== 'string' || typeof key.publicKey !== 'string')
        throw unbound('an API key of the payload has no name or public key')
      const seconds = typeof key.expirationSeconds === 'string' && /^\d{1,12}$/.test(key.expirationSeconds) ? BigInt(key.expirationSeconds) : undefined
      if (key.expirationSeconds !== undefined && seconds === undefined) throw unbound(`the API key ${key.apiKeyName} has an unreadable expiry`)
      rows.push({
        label: `API key ${key.apiKeyName}`,
        value: `${key.publicKey}, ${seconds === undefined ? 'never expires' : lifetime(seconds, now)}`,
        ...(seconds === undefined ? { tone: 'danger' as const } : {}),
      })
    }
  } else {
    const { authenticators } = activity.parameters
    if (!Array.isArray(authenticators) || authenticators.length === 0) throw unbound('the payload adds no passkey')
    for (const authenticator of authenticators) {
      if (!isObject(authenticator) || typeof authenticator.authenticatorName !== 'string') throw unbound('a passkey of the payload has no name')
      rows.push({ label: en.rowPasskey, value: `${authenticator.authenticatorName}, never expires (until removed)` })
    }
  }
  return { rows }
}
