import { expect, test } from 'vitest'
import * as module from './index.js'

// SPEC §9 as written (/work/shared/SPEC.md, "9. Business constants and limits"), table and note
// verbatim. Each row is read back from this text and compared with the constant that holds it, so
// a changed value, a dropped constant or a row without a constant fails here.
const SPEC_9 = `
| Item | Value |
|---|---|
| Maximum pairing attempts | 10 |
| Default webauthn timeout | 300000 ms |
| Webauthn user verification | 'preferred' |
| Recovery code validity | 900 s |
| Recovery session expiry default | 1800 s |
| Wait after re-initialising a provider | 1000 ms |
| Default signing methods | eth_sendTransaction, personal_sign |
| Default events | chainChanged, accountsChanged |
| Optional events | also message, disconnect, connect |
| Chain id format | hex with 0x prefix |
| Default chain id | 1 |
| Webauthn challenge | 32 random bytes |
| Wallet key suffix | 'evm' |
| Wallet names | Turnkey, Turnkey HD |
| Passkey public key algorithm | -7 (ES256) |
| Excluded eip6963 connector keys | phantomevm, coinbase, exodusevm, abstract, metamask, edenonline, intersend |

The storage key for the last used chain id is fixed; its value is not shown.
`

/** The module's exports by name. */
const constants: Readonly<Record<string, unknown>> = Object.fromEntries(Object.entries(module))

const rows = new Map(
  SPEC_9.split('\n')
    .filter((line) => line.startsWith('| ') && !line.startsWith('| Item'))
    .map((line) => line.split('|').map((cell) => cell.trim()))
    .map(([, item, value]) => [item!, value!]),
)

const number = (text: string) => Number(/^-?\d+/.exec(text)?.[0])
const quoted = (text: string) => /^'(.*)'$/.exec(text)?.[1]
const list = (text: string) => text.split(',').map((item) => item.trim())

/** Each SPEC row, the constant that holds it, and the value the row's text gives. */
const expected: [item: string, constant: keyof typeof module, fromSpec: (text: string) => unknown][] = [
  ['Maximum pairing attempts', 'MAX_PAIRING_ATTEMPTS', number],
  ['Default webauthn timeout', 'WEBAUTHN_TIMEOUT_MS', number],
  ['Webauthn user verification', 'WEBAUTHN_USER_VERIFICATION', quoted],
  ['Recovery code validity', 'RECOVERY_CODE_VALIDITY_S', number],
  ['Recovery session expiry default', 'RECOVERY_SESSION_EXPIRY_S', number],
  ['Wait after re-initialising a provider', 'PROVIDER_REINIT_WAIT_MS', number],
  ['Default signing methods', 'DEFAULT_METHODS', list],
  ['Default events', 'DEFAULT_EVENTS', list],
  // "also": the default events, then these.
  ['Optional events', 'OPTIONAL_EVENTS', (text) => [...list(rows.get('Default events')!), ...list(text.replace(/^also /, ''))]],
  ['Chain id format', 'CHAIN_ID_FORMAT', (text) => /^(hex) with 0x prefix$/.exec(text)?.[1]],
  ['Default chain id', 'DEFAULT_CHAIN_ID', number],
  ['Webauthn challenge', 'WEBAUTHN_CHALLENGE_BYTES', number],
  ['Wallet key suffix', 'WALLET_KEY_SUFFIX', quoted],
  ['Wallet names', 'WALLET_NAMES', list],
  ['Passkey public key algorithm', 'PASSKEY_PUBLIC_KEY_ALGORITHM', number],
  ['Excluded eip6963 connector keys', 'EXCLUDED_EIP6963_CONNECTOR_KEYS', list],
]

test('default: every row of SPEC §9 has its constant, with the value the spec gives', () => {
  expect([...rows.keys()]).toEqual(expected.map(([item]) => item))
  for (const [item, name, fromSpec] of expected) {
    const value = fromSpec(rows.get(item)!)
    expect(value, item).not.toBeUndefined()
    expect(value, item).not.toBeNaN()
    expect({ item, value: constants[name] }).toEqual({ item, value })
  }
})

test('default: units the spec names are the units of the constants', () => {
  for (const [item, name] of expected) {
    const text = rows.get(item)!
    if (/ ms$/.test(text)) expect(name, item).toMatch(/_MS$/)
    if (/ s$/.test(text)) expect(name, item).toMatch(/_S$/)
  }
})

test('default: the fixed storage key of the last used chain id, and nothing beyond SPEC §9 in the module', () => {
  expect(rows.size).toBe(16)
  expect(SPEC_9).toContain('The storage key for the last used chain id is fixed')
  expect(module.LAST_USED_CHAIN_ID_KEY).toBe('latchkey.lastUsedChainId')
  expect(Object.keys(constants).sort()).toEqual([...expected.map(([, name]) => name), 'LAST_USED_CHAIN_ID_KEY'].sort())
})
