import { describe, expect, test } from 'vitest'
import { type GrantRequestError, GrantWithoutExpiryError, MalformedGrantError, UnknownPermissionError } from '../src/errors.js'
import { toGrantAnswer, toGrantParameters, toPermissionResponses } from '../src/permissions.js'

// ERC-7715 requests to the kms's create_grant parameters and its grants back to
// wallet_getPermissions answers (src/permissions.ts): pure mappings, so no stack.

const account = '0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266'
const token = '0x5FbDB2315678afecb367f032d93F642f64180aa3'
const NOW = Date.UTC(2030, 0, 1)
const EXPIRY = NOW / 1000 + 3600
const compressed = `02${'ab'.repeat(32)}`
const options = { account, userId: 'user-1', now: NOW } as const
const request = (overrides: Record<string, unknown> = {}) => ({
  chainId: '0x7a69',
  address: account,
  expiry: EXPIRY,
  signer: { type: 'account', data: { address: account } },
  permissions: [
    { type: 'erc20-recurring-allowance', data: { token, allowance: '0x4563918244f40000', start: NOW / 1000, period: 86400 }, policies: [] },
    { type: 'native-token-recurring-allowance', data: { allowance: '1000000000000000', period: 3600 }, policies: [] },
    { type: 'contract-call', data: { address: token, calls: ['transfer(address,uint256)', '0x095EA7B3'] }, policies: [] },
  ],
  ...overrides,
})
const failure = (run: () => unknown) => {
  try {
    run()
  } catch (error) {
    return error as GrantRequestError
  }
  throw new Error('expected a refusal')
}

describe('toGrantParameters', () => {
  test('default: an ERC-7715 request becomes create_grant parameters, the key left for the consent frame to name', () => {
    expect(toGrantParameters(request(), { ...options, apiKeyName: 'game' })).toEqual({
      userId: 'user-1',
      apiKey: { apiKeyName: 'game', publicKey: '' },
      grant: {
        chainId: '31337',
        account,
        expiry: String(EXPIRY),
        permissions: [
          {
            type: 'erc20-recurring-allowance',
            data: { address: token.toLowerCase(), allowance: '5000000000000000000', start: String(NOW / 1000), period: '86400' },
          },
          { type: 'native-token-recurring-allowance', data: { allowance: '1000000000000000', start: '0', period: '3600' } },
          { type: 'contract-call', data: { address: token.toLowerCase(), calls: ['0xa9059cbb', '0x095ea7b3'] } },
        ],
      },
    })
  })

  test('behavior: MetaMask’s later shape (expiry rule, account signer, one periodic permission) reads the same', () => {
    const later = {
      chainId: '0x7a69',
      to: account,
      rules: [{ type: 'expiry', data: { timestamp: EXPIRY } }],
      permission: { type: 'erc20-token-periodic', data: { tokenAddress: token, periodAmount: '0x1', periodDuration: 604800, startTime: 0 } },
    }
    expect(toGrantParameters(later, { ...options, apiKeyName: 'later' })).toEqual({
      userId: 'user-1',
      apiKey: { apiKeyName: 'later', publicKey: '' },
      grant: {
        chainId: '31337',
        account,
        expiry: String(EXPIRY),
        permissions: [{ type: 'erc20-recurring-allowance', data: { address: token.toLowerCase(), allowance: '1', start: '0', period: '604800' } }],
      },
    })
  })

  test('error: refuses a grant with no expiry, or an expiry of 0', () => {
    const { expiry: _, ...withoutExpiry } = request()
    for (const grant of [withoutExpiry, request({ expiry: 0 }), request({ expiry: null })]) {
      const error = failure(() => toGrantParameters(grant, options))
      expect(error).toBeInstanceOf(GrantWithoutExpiryError)
      expect([error.code, error.rpcCode, error.message]).toEqual([
        'grant_without_expiry',
        -32602,
        'The grant has no expiry: a permission that never ends is refused',
      ])
    }
  })

  test('error: refuses an unknown permission type, rule or policy', () => {
    const cases = [
      [
        request({ permissions: [{ type: 'native-token-stream', data: {} }] }),
        'Unknown permission type "native-token-stream": the wallet can grant only native-token-recurring-allowance, erc20-recurring-allowance, native-token-periodic, erc20-token-periodic, contract-call',
      ],
      [{ ...request({ expiry: undefined }), rules: [{ type: 'gas-limit', data: {} }] }, 'Unknown rule type "gas-limit": the wallet enforces only expiry'],
      [request({ policies: [{ type: 'rate-limit', data: {} }] }), 'The grant carries policies: the wallet enforces only the limits of its permissions'],
      [
        request({ permissions: [{ type: 'contract-call', data: { address: token, calls: ['0xa9059cbb'] }, policies: [{ type: 'gas', data: {} }] }] }),
        'Permission 1 carries policies: the wallet enforces only the limits of its permissions',
      ],
    ] as const
    for (const [grant, message] of cases) {
      const error = failure(() => toGrantParameters(grant, options))
      expect(error).toBeInstanceOf(UnknownPermissionError)
      expect([error.code, error.message]).toEqual(['unknown_permission', message])
    }
  })

  test('error: refuses malformed amounts, periods, addresses, signers and accounts', () => {
    const erc20 = (data: Record<string, unknown>) =>
      request({ permissions: [{ type: 'erc20-recurring-allowance', data: { token, allowance: '1', period: 60, ...data } }] })
    const cases = [
      [erc20({ allowance: '1.5' }), 'The erc20-recurring-allowance permission\'s "allowance" is not a quantity: 1.5'],
      [erc20({ allowance: -1 }), 'The erc20-recurring-allowance permission\'s "allowance" is not a quantity: -1'],
      [erc20({ allowance: `0x${'f'.repeat(65)}` }), `The erc20-recurring-allowance permission's "allowance" is not a quantity: 0x${'f'.repeat(65)}`],
      [erc20({ period: 0 }), 'The erc20-recurring-allowance permission\'s "period" is zero'],
      [erc20({ token: '0x1234' }), 'The erc20-recurring-allowance permission\'s "token" is not an address: 0x1234'],
      [
        request({ permissions: [{ type: 'contract-call', data: { address: token, calls: [] } }] }),
        'The contract-call permission names no functions: it would allow every call',
      ],
      [request({ permissions: [] }), 'The grant has no permissions'],
      [request({ expiry: NOW / 1000 }), 'The grant expired already, at 2030-01-01 00:00:00 UTC'],
      [request({ address: token }), `The grant is for the account ${token}, not this wallet's account ${account}`],
      [
        request({ signer: { type: 'key', data: { type: 'secp256r1', publicKey: '0x02' } } }),
        'The grant\'s signer type "key" is not one the wallet can bind: it signs inside a grant with its own key, so name an account signer or none',
      ],
      [request({ signer: { type: 'account', data: { address: '0x1234' } } }), "The grant's account signer is not an address: 0x1234"],
      [request({ chainId: 'mainnet' }), 'The grant\'s "chainId" is not a chain id: mainnet'],
    ] as const
    for (const [grant, message] of cases) {
      const error = failure(() => toGrantParameters(grant, options))
      expect(error).toBeInstanceOf(MalformedGrantError)
      expect([error.code, error.message]).toEqual(['malformed_grant', message])
    }
  })
})

describe('answers', () => {
  test('default: wallet_grantPermissions answers the request with its grant as context', () => {
    expect(toGrantAnswer(request(), { grantId: 'grant-1' }, account)).toEqual({ ...request(), context: 'grant-1', accounts: [account] })
  })

  test('default: wallet_getPermissions answers each grant in the ERC’s first shape', () => {
    const parameters = toGrantParameters(request(), options)
    expect(
      toPermissionResponses([
        {
          grantId: 'grant-1',
          publicKey: compressed,
          chainId: '31337',
          account: account.toLowerCase(),
          expiry: String(EXPIRY),
          permissions: parameters.grant.permissions,
        },
      ]),
    ).toEqual([
      {
        chainId: '0x7a69',
        address: account,
        expiry: EXPIRY,
        signer: { type: 'key', data: { type: 'secp256r1', publicKey: `0x${compressed}` } },
        permissions: [
          { type: 'erc20-recurring-allowance', data: { token, allowance: '0x4563918244f40000', start: NOW / 1000, period: 86400 }, policies: [] },
          { type: 'native-token-recurring-allowance', data: { allowance: '0x38d7ea4c68000', start: 0, period: 3600 }, policies: [] },
          { type: 'contract-call', data: { address: token, calls: ['0xa9059cbb', '0x095ea7b3'] }, policies: [] },
        ],
        context: 'grant-1',
      },
    ])
  })
})
