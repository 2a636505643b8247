import { readFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { dirname, join } from 'node:path'
import { expect, test } from 'vitest'
import { ACTIVITIES } from '../src/index.js'

// The activity table against the official client's own types (@turnkey/http 6.6.0,
// public_api.types.d.ts): each path takes the type the client sends today, and echoes the intent
// and writes the result under keys the clients know. A wrong result key fails silently in the SDKs
// (fields come back undefined), so it is checked here rather than found in an app.

const require = createRequire(import.meta.url)
const types = readFileSync(join(dirname(require.resolve('@turnkey/http')), '__generated__/services/coordinator/public/v1/public_api.types.d.ts'), 'utf8')

/** The body of `name: { … }` at the definitions' indentation. */
function block(name: string): string {
  const start = types.indexOf(`\n    ${name}: {\n`)
  if (start < 0) throw new Error(`no ${name} in public_api.types.d.ts`)
  return types.slice(start, types.indexOf('\n    };', start))
}
const keysOf = (name: string) => new Set([...block(name).matchAll(/^ {8}(\w+)\?:/gm)].map((match) => match[1]!))
const intentKeys = keysOf('v1Intent')
const resultKeys = keysOf('v1Result')

/** The activity type the client sends on a submit path. */
function clientType(op: string): string | undefined {
  const operation = types.match(new RegExp(`"/public/v1/submit/${op}": \\{[^}]*?operations\\["(\\w+)"\\]`))?.[1]
  const request = operation && block(operation).match(/definitions\["(\w+)"\]/)?.[1]
  return request && block(request).match(/type: "(\w+)"/)?.[1]
}

/** Latchkey's own activities (the kms README's "Grants" and "Second factors"): no Turnkey client knows them, by design. */
const LATCHKEY_EXTENSIONS = new Set([
  'ACTIVITY_TYPE_LATCHKEY_CREATE_GRANT',
  'ACTIVITY_TYPE_LATCHKEY_REVOKE_GRANT',
  'ACTIVITY_TYPE_LATCHKEY_CREATE_TOTP_FACTOR',
  'ACTIVITY_TYPE_LATCHKEY_CREATE_PASSKEY_FACTOR',
  'ACTIVITY_TYPE_LATCHKEY_VERIFY_MFA_FACTOR',
  'ACTIVITY_TYPE_LATCHKEY_DELETE_MFA_FACTOR',
])

test('default: each path takes the activity type the client sends, with intent and result keys the clients know', () => {
  // The reading of the types file itself: a path's type, and keys that exist and keys that do not.
  expect([
    clientType('create_users'),
    intentKeys.has('createUsersIntentV4'),
    resultKeys.has('createUsersResult'),
    resultKeys.has('createUsersResultV4'),
  ]).toEqual(['ACTIVITY_TYPE_CREATE_USERS_V4', true, true, false])
  const problems: string[] = []
  const turnkeyActivities = Object.entries(ACTIVITIES).filter(([type]) => !LATCHKEY_EXTENSIONS.has(type))
  const ops = new Set(turnkeyActivities.map(([, activity]) => activity.op))
  for (const op of ops) {
    const sent = clientType(op)
    if (!sent) problems.push(`${op}: not a submit path of the client`)
    else if (ACTIVITIES[sent]?.op !== op) problems.push(`${op}: the client sends ${sent}, which is not registered`)
  }
  for (const [type, activity] of turnkeyActivities) {
    if (!intentKeys.has(activity.intentKey)) problems.push(`${type}: unknown intent key ${activity.intentKey}`)
    if (!resultKeys.has(activity.resultKey)) problems.push(`${type}: unknown result key ${activity.resultKey}`)
  }
  expect(problems).toEqual([])
})

test('default: every operation of SPEC §7 that the client has is served', () => {
  const submits = [
    'create_api_keys',
    'create_api_only_users',
    'create_authenticators',
    'create_invitations',
    'create_oauth_providers',
    'create_policies',
    'create_policy',
    'create_private_key_tag',
    'create_private_keys',
    'create_read_only_session',
    'create_read_write_session',
    'create_sub_organization',
    'create_user_tag',
    'create_users',
    'create_wallet',
    'create_wallet_accounts',
    'delete_api_keys',
    'delete_authenticators',
    'delete_invitation',
    'delete_oauth_providers',
    'delete_policy',
    'delete_policies',
    'delete_private_key_tags',
    'delete_private_keys',
    'delete_sub_organization',
    'delete_user_tags',
    'delete_users',
    'delete_wallets',
    'delete_wallet_accounts',
    'email_auth',
    'export_private_key',
    'export_wallet',
    'export_wallet_account',
    'import_private_key',
    'import_wallet',
    'init_import_private_key',
    'init_import_wallet',
    'init_otp_auth',
    'init_user_email_recovery',
    'oauth',
    'oauth_login',
    'otp_auth',
    'recover_user',
    'remove_organization_feature',
    'set_organization_feature',
    'sign_raw_payload',
    'sign_raw_payloads',
    'sign_transaction',
    'stamp_login',
    'update_organization_name',
    'update_policy',
    'update_private_key_tag',
    'update_root_quorum',
    'update_user',
    'update_user_email',
    'update_user_name',
    'update_user_phone_number',
    'update_user_tag',
    'update_wallet',
  ]
  const served = new Set(Object.values(ACTIVITIES).map((activity) => activity.op))
  expect(submits.filter((op) => !served.has(op))).toEqual([])
})
