import { TransactionExecutionError, UserRejectedRequestError as ViemUserRejected } from 'viem'
import { describe, expect, test } from 'vitest'
import * as connection from './connection.js'
import { MfaRequiredError, toEmbeddedFlowError } from './embedded.js'
import * as rpc from './rpc.js'

describe('catalogue texts (SPEC §8)', () => {
  test('default: short messages and codes are exact', () => {
    const cases = [
      [new connection.ProviderNotFoundError(), 'No provider found', 'provider_not_found'],
      [new connection.NotConnectedError(), 'Please call connect() before request()', 'not_connected'],
      [new connection.NoRpcUrlError({ chainId: 5 }), 'No RPC url provided for chainId', 'no_rpc_url'],
      [new connection.InvalidChainsError(), 'Invalid chains', 'invalid_chains'],
      [
        new connection.NetworkSwitchingNotAvailableError(),
        'Network switching is not available at this time. The user should manually switch network in their wallet',
        'network_switching_only_available_in_wallet',
      ],
    ] as const
    for (const [error, shortMessage, code] of cases) {
      expect(error.shortMessage).toBe(shortMessage)
      expect(error.code).toBe(code)
      expect(error.message.startsWith(shortMessage)).toBe(true)
    }
  })

  test('behavior: the message carries details and the version', () => {
    expect(new connection.NoRpcUrlError({ chainId: 5 }).message).toMatchInlineSnapshot(`
      "No RPC url provided for chainId

      Details: chainId 5

      Version: @latchkey/core@0.1.0"
    `)
  })
})

describe('toProviderError', () => {
  test('default: each EIP-1193 code becomes its class', () => {
    const expected = {
      4001: rpc.UserRejectedRequestError,
      4100: rpc.UnauthorizedProviderError,
      4200: rpc.UnsupportedProviderMethodError,
      4900: rpc.ProviderDisconnectedError,
      4901: rpc.ChainDisconnectedError,
      4902: rpc.UnrecognizedChainError,
      [-32002]: rpc.RequestPendingError,
    }
    for (const [code, Class] of Object.entries(expected)) {
      const error = rpc.toProviderError({ code: Number(code), message: 'wallet says no' })
      expect(error).toBeInstanceOf(Class)
      expect((error as rpc.ProviderRpcError).rpcCode).toBe(Number(code))
      expect(error.details).toBe('wallet says no')
      expect(Class.code).toBe(Number(code))
    }
  })

  test('behavior: MetaMask nests 4902 in data.originalError', () => {
    const error = rpc.toProviderError({ code: -32603, message: 'Internal', data: { originalError: { code: 4902 } } })
    expect(error).toBeInstanceOf(rpc.UnrecognizedChainError)
  })

  test('behavior: viem-wrapped wallet errors are unwrapped by their code', () => {
    const wrapped = new TransactionExecutionError(new ViemUserRejected(new Error('denied by user')), {} as never)
    const error = rpc.toProviderError(wrapped)
    expect(error).toBeInstanceOf(rpc.UserRejectedRequestError)
    expect(error.shortMessage).toBe('User rejected the request.')
  })

  test('behavior: an unknown code keeps the wallet reason as the message', () => {
    const error = rpc.toProviderError({ code: -32000, message: 'insufficient funds for gas' })
    expect(error).toBeInstanceOf(rpc.UnknownProviderError)
    expect(error.shortMessage).toBe('insufficient funds for gas')
    expect((error as rpc.ProviderRpcError).rpcCode).toBe(-32000)
  })

  test('behavior: our own errors pass through unchanged', () => {
    const ours = new connection.ProviderNotFoundError()
    expect(rpc.toProviderError(ours)).toBe(ours)
  })

  test('behavior: denials, timeouts and cancellations are benign; the rest is not', () => {
    expect(rpc.isBenign(new rpc.UserRejectedRequestError())).toBe(true)
    expect(rpc.isBenign(new connection.TimeoutError({ what: 'x', ms: 1 }))).toBe(true)
    expect(rpc.isBenign(new connection.CancelledError())).toBe(true)
    expect(rpc.isBenign(new connection.ProviderNotFoundError())).toBe(false)
  })

  test('behavior: walk finds a cause by predicate', () => {
    const inner = new rpc.UserRejectedRequestError()
    const outer = new connection.CancelledError({ cause: inner })
    expect(outer.walk((e) => e instanceof rpc.UserRejectedRequestError)).toBe(inner)
    expect(outer.walk()).toBe(inner)
  })
})

describe('MfaRequiredError', () => {
  test('behavior: the embedded wallet’s refusal for want of a second factor is core’s MfaRequiredError, with its reason, activity and the kms’s words', async () => {
    const { MfaRequiredError: EmbeddedMfaRequiredError } = await import('@latchkey/embedded')
    const refused = new EmbeddedMfaRequiredError({
      kmsCode: 7,
      message: 'a verified second factor is required',
      reason: 'MFA_REQUIRED',
      activityType: 'ACTIVITY_TYPE_UPDATE_USER_EMAIL',
    })
    const typed = toEmbeddedFlowError(refused)
    expect(typed).toBeInstanceOf(MfaRequiredError)
    expect(typed).toMatchObject({
      name: 'MfaRequiredError',
      code: 'mfa_required',
      shortMessage: 'Your second factor is needed for this.',
      details: 'Turnkey error 7: a verified second factor is required',
      reason: 'MFA_REQUIRED',
      activityType: 'ACTIVITY_TYPE_UPDATE_USER_EMAIL',
      cause: refused,
    })
    const enrol = toEmbeddedFlowError(new EmbeddedMfaRequiredError({ kmsCode: 7, message: 'enrol a factor', reason: 'MFA_ENROLLMENT_REQUIRED' }))
    expect(enrol).toMatchObject({ reason: 'MFA_ENROLLMENT_REQUIRED', activityType: undefined })
  })
})
