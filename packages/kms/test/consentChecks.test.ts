import {
  encodeAbiParameters,
  encodeFunctionData,
  type Hex,
  hashMessage,
  keccak256,
  parseAbi,
  parseGwei,
  serializeTransaction,
  serializeTypedData,
  type TransactionSerializable,
  toHex,
} from 'viem'
import { privateKeyToAccount } from 'viem/accounts'
import { describe, expect, test } from 'vitest'
import { batchExecutorAddress as executor } from '../../../contracts/index.js'
import type { FrameRequest } from '../src/frames/browser/channel.js'
import { chainRpc, parseConsentConfig } from '../src/frames/browser/consentConfig.js'
import { parseReviewAndStamp } from '../src/frames/browser/consentMessages.js'
import { assertPayloadMatches, type PayloadSettings } from '../src/frames/browser/consentPayload.js'

// The consent frame stamps only the body it showed: each method's payload is checked against the
// request (consentChecks/*), with the frame's own settings (the kms's executor, the export frame's
// key). Every refusal below names what its check refuses; removing a check turns its case green
// into a stamp, which these cases catch.

const account = privateKeyToAccount(keccak256(toHex('latchkey consent checks account'))).address
const other = privateKeyToAccount(keccak256(toHex('latchkey consent checks other'))).address
const token = privateKeyToAccount(keccak256(toHex('latchkey consent checks token'))).address
const chainId = 31337
const settings: PayloadSettings = { executor }

const activity = (type: string, parameters: Record<string, unknown>) => JSON.stringify({ type, timestampMs: '1', organizationId: 'org', parameters })
/** Runs the frame's check as REVIEW_AND_STAMP would: parsed, then bound; answers the facts or the refusal. */
function check(request: { method: string; params: unknown[] }, payload: string, frame: PayloadSettings = settings) {
  const value = parseReviewAndStamp({ type: 'REVIEW_AND_STAMP', requestId: 'r', value: { request, payload, context: { account, chainId } } } as FrameRequest)
  try {
    return { facts: assertPayloadMatches(value, frame) }
  } catch (error) {
    return { code: (error as { code?: number }).code, message: (error as Error).message }
  }
}
const refused = (message: string) => ({ code: -32602, message })

describe('eth_signTypedData_v4', () => {
  const typedData = {
    domain: { name: 'Mail', version: '1', chainId, verifyingContract: token },
    types: {
      // eth_signTypedData_v4 names the domain's type; serializeTypedData keeps the domain only then.
      EIP712Domain: [
        { name: 'name', type: 'string' },
        { name: 'version', type: 'string' },
        { name: 'chainId', type: 'uint256' },
        { name: 'verifyingContract', type: 'address' },
      ],
      Mail: [
        { name: 'to', type: 'address' },
        { name: 'contents', type: 'string' },
        { name: 'amount', type: 'uint256' },
      ],
    },
    primaryType: 'Mail',
    message: { to: other, contents: 'hello', amount: 5n },
  } as const
  const body = (data: Parameters<typeof serializeTypedData>[0] = typedData, parameters: Record<string, unknown> = {}) =>
    activity('ACTIVITY_TYPE_SIGN_RAW_PAYLOAD_V2', {
      signWith: account,
      payload: serializeTypedData(data),
      encoding: 'PAYLOAD_ENCODING_EIP712',
      hashFunction: 'HASH_FUNCTION_NOT_APPLICABLE',
      ...parameters,
    })
  // The app's own JSON: other key order, the amount as a number, the chain id as hex.
  const requested = JSON.stringify({
    primaryType: 'Mail',
    message: { amount: 5, contents: 'hello', to: other.toLowerCase() },
    types: typedData.types,
    domain: { verifyingContract: token, chainId: '0x7a69', version: '1', name: 'Mail' },
  })
  const request = (data: unknown = requested, signer: string = account) => ({ method: 'eth_signTypedData_v4', params: [signer, data] })

  test('default: the same typed data, compared as what is signed, in either hash function name @turnkey/viem and the contract use', () => {
    expect(check(request(), body())).toEqual({ facts: undefined })
    expect(check(request(JSON.parse(requested)), body(typedData, { hashFunction: 'HASH_FUNCTION_NO_OP' }))).toEqual({ facts: undefined })
  })

  test('error: other typed data, another signer, another encoding, malformed JSON', () => {
    expect(check(request(), body({ ...typedData, message: { ...typedData.message, amount: 6n } }))).toEqual(
      refused('the payload does not sign the requested typed data'),
    )
    expect(check(request(), body({ ...typedData, domain: { ...typedData.domain, chainId: 1 } }))).toEqual(
      refused('the payload does not sign the requested typed data'),
    )
    expect(check(request(), body(typedData, { signWith: other }))).toEqual(refused(`the payload signs with ${other}, not with the account ${account}`))
    expect(check(request(requested, other), body())).toEqual(refused(`the typed data is to be signed by ${other}, not by ${account}`))
    expect(check(request(), body(typedData, { encoding: 'PAYLOAD_ENCODING_HEXADECIMAL' }))).toEqual(
      refused('typed data must be sent as PAYLOAD_ENCODING_EIP712 with HASH_FUNCTION_NOT_APPLICABLE'),
    )
    expect(check(request(), body(typedData, { payload: '{"types"' }))).toEqual(refused('the payload is not JSON typed data'))
    expect(check(request('{"types"'), body())).toEqual(refused('the requested typed data is not JSON typed data'))
    expect(check(request(JSON.stringify({ ...JSON.parse(requested), message: { to: 'nobody' } })), body())).toEqual(
      refused('the requested typed data does not match its EIP-712 types'),
    )
    expect(check(request(), activity('ACTIVITY_TYPE_EXPORT_WALLET', { targetPublicKey: '04' }))).toEqual(
      refused('the payload is not a raw payload signature (ACTIVITY_TYPE_SIGN_RAW_PAYLOAD_V2), it is ACTIVITY_TYPE_EXPORT_WALLET'),
    )
  })
})

const TOKEN_ABI = parseAbi(['function transfer(address to, uint256 amount)'])
const transferData = encodeFunctionData({ abi: TOKEN_ABI, functionName: 'transfer', args: [other, 10n ** 18n] })
/** What the wallet fills in: nonce, gas and fees. */
const filled = { nonce: 3, gas: 100_000n, maxFeePerGas: parseGwei('2'), maxPriorityFeePerGas: parseGwei('1') }
const signTransaction = (transaction: TransactionSerializable, parameters: Record<string, unknown> = {}) =>
  activity('ACTIVITY_TYPE_SIGN_TRANSACTION_V2', {
    signWith: account,
    unsignedTransaction: serializeTransaction(transaction).slice(2),
    type: 'TRANSACTION_TYPE_ETHEREUM',
    ...parameters,
  })
const signedAuthorization = (address: Hex, authorizationChainId = chainId) => ({
  address,
  chainId: authorizationChainId,
  nonce: 4,
  r: toHex(1n, { size: 32 }),
  s: toHex(2n, { size: 32 }),
  yParity: 0,
})

describe('eth_sendTransaction', () => {
  const sent = { to: token, value: 0n, data: transferData, chainId, type: 'eip1559', ...filled } as const
  const request = (fields: Record<string, unknown> = {}) => ({
    method: 'eth_sendTransaction',
    params: [{ from: account, to: token, data: transferData, ...fields }],
  })

  test('default: the requested call with the wallet’s gas and fees; the fee they allow is shown', () => {
    expect(check(request(), signTransaction(sent))).toEqual({
      facts: { rows: [{ label: 'Fee at most', value: '0.0002 ETH (100000 gas at 2 gwei)' }] },
    })
    expect(check(request({ value: '0x5', chainId: '0x7a69' }), signTransaction({ ...sent, value: 5n }))).toMatchObject({ facts: {} })
  })

  test('error: another recipient, value, calldata or chain; another signer; not a transaction', () => {
    const mismatch = refused('the payload does not send the requested transaction')
    expect(check(request(), signTransaction({ ...sent, to: other }))).toEqual(mismatch)
    expect(check(request(), signTransaction({ ...sent, value: 1n }))).toEqual(mismatch)
    expect(check(request(), signTransaction({ ...sent, data: `${transferData}00` }))).toEqual(mismatch)
    expect(check(request({ to: undefined, data: '0x6000' }), signTransaction({ ...sent, to: undefined, data: '0x6000' }))).toMatchObject({ facts: {} })
    expect(check(request({ to: undefined, data: '0x6000' }), signTransaction(sent))).toEqual(mismatch)
    expect(check(request(), signTransaction({ ...sent, chainId: 1 }))).toEqual(refused("the transaction is for chain 1, not for the wallet's chain 31337"))
    expect(check(request({ chainId: '0x1' }), signTransaction(sent))).toEqual(
      refused('the requested transaction is for Ethereum (1), but the wallet is on Anvil A (31337)'),
    )
    expect(check(request({ from: other }), signTransaction(sent))).toEqual(
      refused(`the requested transaction is from ${other}, not from the account ${account}`),
    )
    expect(check(request(), signTransaction(sent, { signWith: other }))).toEqual(refused(`the payload signs with ${other}, not with the account ${account}`))
    expect(check(request(), signTransaction(sent, { type: 'TRANSACTION_TYPE_SOLANA' }))).toEqual(
      refused("the payload's transaction type is TRANSACTION_TYPE_SOLANA, not TRANSACTION_TYPE_ETHEREUM"),
    )
    expect(check(request(), signTransaction(sent, { unsignedTransaction: '02zz' }))).toEqual(refused('the payload holds no serialized transaction'))
    expect(check(request(), signTransaction(sent, { unsignedTransaction: 'c0' }))).toEqual(refused('the payload holds no serialized transaction'))
    expect(check(request({ to: 'nobody' }), signTransaction(sent))).toEqual(
      refused('the requested transaction is malformed: The transaction\'s "to" is not an address: nobody'),
    )
  })

  test('error: a transaction that delegates the account to anything but the executor, or on another chain', () => {
    const delegating = (address: Hex, on = chainId) => signTransaction({ ...sent, type: 'eip7702', authorizationList: [signedAuthorization(address, on)] })
    expect(check(request(), delegating(executor))).toMatchObject({ facts: {} })
    expect(check(request(), delegating(other))).toEqual(refused(`the transaction delegates the account to ${other}, not to the wallet's batch executor`))
    expect(check(request(), delegating(executor), {})).toEqual(
      refused(`the transaction delegates the account to ${executor}, not to the wallet's batch executor`),
    )
    expect(check(request(), delegating(executor, 0))).toEqual(refused("the transaction's authorization is for chain 0, not 31337"))
  })
})

describe('wallet_sendCalls', () => {
  const CALLS = [{ type: 'tuple[]', components: [{ type: 'address' }, { type: 'uint256' }, { type: 'bytes' }] }] as const
  const EXECUTE = parseAbi(['function execute(bytes32 mode, bytes executionData) payable'])
  const BATCH_MODE = '0x0100000000000000000000000000000000000000000000000000000000000000'
  const calls = [
    { to: token, data: transferData },
    { to: other, value: '0x5' },
  ]
  /** The calldata the embedded wallet builds (smartAccount.ts executeData), written out here independently. */
  const execute = (list: readonly (readonly [Hex, bigint, Hex])[]) =>
    encodeFunctionData({ abi: EXECUTE, functionName: 'execute', args: [BATCH_MODE, encodeAbiParameters(CALLS, [list])] })
  const batchData = execute([
    [token, 0n, transferData],
    [other, 5n, '0x'],
  ])
  const sent = { to: account, value: 0n, data: batchData, chainId, type: 'eip1559', ...filled } as const
  const request = (fields: Record<string, unknown> = {}) => ({
    method: 'wallet_sendCalls',
    params: [{ version: '2.0.0', chainId: '0x7a69', from: account, calls, ...fields }],
  })

  test('default: one transaction to the account itself running exactly the calls, upgrading it to the executor on the way', () => {
    expect(check(request(), signTransaction(sent))).toMatchObject({ facts: { rows: [{ label: 'Fee at most' }] } })
    expect(check(request(), signTransaction({ ...sent, type: 'eip7702', authorizationList: [signedAuthorization(executor)] }))).toMatchObject({ facts: {} })
  })

  test('error: other calls, another target, value carried, another chain, no executor', () => {
    const mismatch = refused('the payload does not send the requested calls')
    expect(check(request(), signTransaction({ ...sent, data: execute([[token, 0n, transferData]]) }))).toEqual(mismatch)
    expect(check(request(), signTransaction({ ...sent, to: executor }))).toEqual(mismatch)
    expect(check(request(), signTransaction({ ...sent, value: 5n }))).toEqual(mismatch)
    expect(check(request({ chainId: '0x1' }), signTransaction(sent))).toEqual(
      refused('the requested batch is for chain 0x1, but the wallet is on Anvil A (31337)'),
    )
    expect(check(request({ calls: [] }), signTransaction(sent))).toEqual(refused('the requested batch has no calls'))
    expect(check(request({ from: other }), signTransaction(sent))).toEqual(refused(`the requested batch is from ${other}, not from the account ${account}`))
    expect(check(request(), signTransaction(sent), {})).toEqual(refused('this frame has no batch executor configured, so it cannot sign a batch of calls'))
    expect(check(request(), signTransaction({ ...sent, type: 'eip7702', authorizationList: [signedAuthorization(other)] }))).toEqual(
      refused(`the transaction delegates the account to ${other}, not to the wallet's batch executor`),
    )
  })
})

describe('eip7702_authorization', () => {
  const body = (authorization: Record<string, unknown>, parameters: Record<string, unknown> = {}) =>
    activity('ACTIVITY_TYPE_SIGN_RAW_PAYLOAD_V2', {
      signWith: account,
      payload: JSON.stringify(authorization),
      encoding: 'PAYLOAD_ENCODING_EIP7702_AUTHORIZATION',
      hashFunction: 'HASH_FUNCTION_NOT_APPLICABLE',
      ...parameters,
    })
  const request = (fields: Record<string, unknown> = {}) => ({ method: 'eip7702_authorization', params: [{ address: executor, chainId, nonce: 4, ...fields }] })
  const signed = { address: executor, chainId: '31337', nonce: '4' }

  test('default: to the executor, on the wallet’s chain, at the requested nonce', () => {
    expect(check(request(), body(signed))).toEqual({ facts: undefined })
    expect(check(request({ address: undefined, contractAddress: executor, nonce: '0x4' }), body(signed))).toEqual({ facts: undefined })
  })

  test('error: another delegate, every chain, another chain, another nonce, no executor configured', () => {
    expect(check(request({ address: other }), body({ ...signed, address: other }))).toEqual(
      refused(`the authorization delegates to ${other}, not to the wallet's batch executor ${executor}`),
    )
    expect(check(request({ chainId: 0 }), body({ ...signed, chainId: 0 }))).toEqual(
      refused("the authorization is for chain 0, not for the wallet's chain 31337"),
    )
    expect(check(request(), body({ ...signed, chainId: 1 }))).toEqual(refused("the authorization is for chain 1, not for the wallet's chain 31337"))
    expect(check(request(), body({ ...signed, nonce: 5 }))).toEqual(refused("the authorization's nonce 5 is not the requested nonce 4"))
    expect(check(request({ nonce: undefined }), body(signed))).toEqual(refused("the authorization's nonce 4 is not the requested nonce undefined"))
    expect(check(request({ chainId: 1 }), body(signed))).toEqual(refused('the payload does not sign the requested authorization'))
    expect(check(request(), body(signed), {})).toEqual(refused('this frame has no batch executor configured, so it signs no EIP-7702 authorization'))
    expect(check(request(), body(signed, { encoding: 'PAYLOAD_ENCODING_HEXADECIMAL', payload: keccak256('0x05') }))).toEqual(
      refused('an authorization must be sent as PAYLOAD_ENCODING_EIP7702_AUTHORIZATION with HASH_FUNCTION_NOT_APPLICABLE'),
    )
    expect(check(request(), body(signed, { payload: 'nonsense' }))).toEqual(refused('the payload holds no authorization {address, chainId, nonce}'))
    expect(check(request(), body(signed, { signWith: other }))).toEqual(refused(`the payload signs with ${other}, not with the account ${account}`))
  })
})

describe('export_wallet', () => {
  const x = 'a1'.repeat(32)
  const exportKey = `04${x}${'b3'.repeat(32)}` // y ends odd: compressed 03‖x
  const frame = { ...settings, exportKey }
  const request = { method: 'export_wallet', params: [] }
  const exportWallet = (targetPublicKey: string) => activity('ACTIVITY_TYPE_EXPORT_WALLET', { walletId: 'w', targetPublicKey })
  const exportAccount = (targetPublicKey: string, address: string = account) => activity('ACTIVITY_TYPE_EXPORT_WALLET_ACCOUNT', { address, targetPublicKey })

  test('default: to the export frame’s key (uncompressed or compressed), with what is exported and a warning', () => {
    expect(check(request, exportWallet(exportKey), frame)).toEqual({
      facts: {
        rows: [{ label: 'Exports', value: 'the secret recovery phrase of the whole wallet' }],
        warnings: [{ level: 'danger', text: 'It appears only in the export frame. Never type it into a site or share it: whoever has it takes everything.' }],
      },
    })
    expect(check(request, exportAccount(`03${x}`), frame)).toMatchObject({ facts: { rows: [{ label: 'Exports', value: 'the private key of this account' }] } })
  })

  test('error: a key the page names, no export frame, another account, another activity', () => {
    const pageKey = `04${'cd'.repeat(64)}`
    expect(check(request, exportWallet(pageKey), frame)).toEqual(refused('the export is encrypted to a key that is not the export frame’s'))
    expect(check(request, exportWallet(`02${x}`), frame)).toEqual(refused('the export is encrypted to a key that is not the export frame’s'))
    expect(check(request, exportWallet(exportKey), settings)).toEqual(refused('there is no export frame to receive the export: open it first'))
    expect(check(request, exportAccount(exportKey, other), frame)).toEqual(refused(`the export is of ${other}, not of the account ${account}`))
    expect(check(request, activity('ACTIVITY_TYPE_EXPORT_PRIVATE_KEY', { privateKeyId: 'k', targetPublicKey: exportKey }), frame)).toEqual(
      refused('the payload is not an export (ACTIVITY_TYPE_EXPORT_WALLET or ACTIVITY_TYPE_EXPORT_WALLET_ACCOUNT), it is ACTIVITY_TYPE_EXPORT_PRIVATE_KEY'),
    )
  })
})

describe('add_credential', () => {
  const request = { method: 'add_credential', params: [] }
  const publicKey = `02${'ef'.repeat(32)}`

  test('default: each new API key with its expiry, each passkey', () => {
    const { facts } = check(
      request,
      activity('ACTIVITY_TYPE_CREATE_API_KEYS_V2', { userId: 'u', apiKeys: [{ apiKeyName: 'laptop', publicKey, expirationSeconds: '7200' }] }),
    ) as {
      facts: { rows: { label: string; value: string }[] }
    }
    expect(facts.rows).toHaveLength(1)
    expect(facts.rows[0]!.label).toBe('API key laptop')
    expect(facts.rows[0]!.value).toMatch(new RegExp(`^${publicKey}, expires after 2 hours \\(\\d{4}-\\d\\d-\\d\\d \\d\\d:\\d\\d:\\d\\d UTC\\)$`))
    expect(check(request, activity('ACTIVITY_TYPE_CREATE_API_KEYS_V2', { userId: 'u', apiKeys: [{ apiKeyName: 'forever', publicKey }] }))).toEqual({
      facts: { rows: [{ label: 'API key forever', value: `${publicKey}, never expires`, tone: 'danger' }] },
    })
    expect(
      check(
        request,
        activity('ACTIVITY_TYPE_CREATE_AUTHENTICATORS_V2', { userId: 'u', authenticators: [{ authenticatorName: 'phone', challenge: 'c', attestation: {} }] }),
      ),
    ).toEqual({ facts: { rows: [{ label: 'Passkey', value: 'phone, never expires (until removed)' }] } })
    // A linked email (issue 28): its codes sign in, so the user approves it as a new way in.
    expect(check(request, activity('ACTIVITY_TYPE_UPDATE_USER_EMAIL', { userId: 'u', userEmail: 'ada@example.test' }))).toEqual({
      facts: { rows: [{ label: 'Sign-in email', value: 'ada@example.test: codes sent there sign in to this wallet' }] },
    })
  })

  test('error: nothing added, an unreadable expiry, another activity', () => {
    expect(check(request, activity('ACTIVITY_TYPE_CREATE_API_KEYS_V2', { userId: 'u', apiKeys: [] }))).toEqual(refused('the payload adds no API key'))
    expect(
      check(request, activity('ACTIVITY_TYPE_CREATE_API_KEYS_V2', { userId: 'u', apiKeys: [{ apiKeyName: 'k', publicKey, expirationSeconds: 'soon' }] })),
    ).toEqual(refused('the API key k has an unreadable expiry'))
    expect(check(request, activity('ACTIVITY_TYPE_CREATE_AUTHENTICATORS_V2', { userId: 'u', authenticators: [] }))).toEqual(
      refused('the payload adds no passkey'),
    )
    expect(check(request, activity('ACTIVITY_TYPE_UPDATE_USER_EMAIL', { userId: 'u', userEmail: '' }))).toEqual(refused('the payload sets no email'))
    expect(check(request, activity('ACTIVITY_TYPE_CREATE_READ_WRITE_SESSION_V2', { targetPublicKey: publicKey }))).toEqual(
      refused(
        'the payload is not a new credential (ACTIVITY_TYPE_CREATE_API_KEYS_V2 or ACTIVITY_TYPE_CREATE_AUTHENTICATORS_V2 or ACTIVITY_TYPE_UPDATE_USER_EMAIL), it is ACTIVITY_TYPE_CREATE_READ_WRITE_SESSION_V2',
      ),
    )
  })
})

describe('add_account', () => {
  const path = "m/44'/60'/0'/0/1"
  const request = (fields: Record<string, unknown> = {}) => ({ method: 'add_account', params: [{ walletId: 'w', path, ...fields }] })
  const ethereum = { curve: 'CURVE_SECP256K1', pathFormat: 'PATH_FORMAT_BIP32', path, addressFormat: 'ADDRESS_FORMAT_ETHEREUM' }
  const body = (parameters: Record<string, unknown> = {}) =>
    activity('ACTIVITY_TYPE_CREATE_WALLET_ACCOUNTS', { walletId: 'w', accounts: [ethereum], ...parameters })

  test('default: the one Ethereum account requested, in the requested wallet (or the payload’s, when the request names none)', () => {
    expect(check(request(), body())).toEqual({ facts: undefined })
    expect(check(request({ walletId: undefined }), body())).toEqual({ facts: undefined })
  })

  test('error: another wallet, more accounts or none, another path, not an Ethereum account, another activity', () => {
    expect(check(request(), body({ walletId: 'x' }))).toEqual(refused('the payload adds to the wallet x, not to the requested wallet w'))
    expect(check(request(), body({ walletId: undefined }))).toEqual(refused('the payload names no wallet'))
    expect(check(request(), body({ accounts: [ethereum, { ...ethereum, path: "m/44'/60'/0'/0/2" }] }))).toEqual(
      refused('the payload adds 2 accounts, not the one requested'),
    )
    expect(check(request(), body({ accounts: [] }))).toEqual(refused('the payload adds 0 accounts, not the one requested'))
    expect(check(request(), body({ accounts: [{ ...ethereum, path: "m/44'/60'/0'/0/0" }] }))).toEqual(
      refused(`the payload adds the account at m/44'/60'/0'/0/0, not at the requested ${path}`),
    )
    expect(check(request(), body({ accounts: [{ ...ethereum, curve: 'CURVE_ED25519' }] }))).toEqual(
      refused("the payload's account is not an Ethereum account (CURVE_SECP256K1, PATH_FORMAT_BIP32, ADDRESS_FORMAT_ETHEREUM)"),
    )
    expect(check(request(), body({ accounts: [{ ...ethereum, addressFormat: 'ADDRESS_FORMAT_SOLANA' }] }))).toEqual(
      refused("the payload's account is not an Ethereum account (CURVE_SECP256K1, PATH_FORMAT_BIP32, ADDRESS_FORMAT_ETHEREUM)"),
    )
    expect(check(request({ path: undefined }), body())).toEqual(refused("add_account needs the new account's derivation path"))
    expect(check(request({ walletId: 7 }), body())).toEqual(refused("add_account's walletId is not a string"))
    expect(check(request(), activity('ACTIVITY_TYPE_CREATE_WALLET', { walletName: 'w', accounts: [ethereum] }))).toEqual(
      refused('the payload is not a new account (ACTIVITY_TYPE_CREATE_WALLET_ACCOUNTS), it is ACTIVITY_TYPE_CREATE_WALLET'),
    )
  })
})

describe('import_wallet', () => {
  const request = (walletName: unknown = 'Old wallet') => ({ method: 'import_wallet', params: [{ walletName }] })
  const body = (parameters: Record<string, unknown> = {}) =>
    activity('ACTIVITY_TYPE_IMPORT_WALLET', {
      userId: 'u',
      walletName: 'Old wallet',
      encryptedBundle: '{"encappedPublic":"04","ciphertext":"00"}',
      ...parameters,
    })

  test('default: the named wallet, with the import window’s bundle', () => {
    expect(check(request(), body())).toEqual({ facts: undefined })
  })

  test('error: another name, no bundle, no name requested, another activity', () => {
    expect(check(request(), body({ walletName: 'Other' }))).toEqual(refused('the payload imports a wallet named "Other", not "Old wallet"'))
    expect(check(request(), body({ encryptedBundle: '' }))).toEqual(refused('the payload carries no encrypted bundle from the import window'))
    expect(check(request(), body({ encryptedBundle: undefined }))).toEqual(refused('the payload carries no encrypted bundle from the import window'))
    expect(check(request(''), body())).toEqual(refused("import_wallet needs the new wallet's name"))
    expect(check(request(), activity('ACTIVITY_TYPE_INIT_IMPORT_WALLET', { userId: 'u' }))).toEqual(
      refused('the payload is not a wallet import (ACTIVITY_TYPE_IMPORT_WALLET), it is ACTIVITY_TYPE_INIT_IMPORT_WALLET'),
    )
  })
})

describe('init_import', () => {
  const request = { method: 'init_import', params: [] }

  test('default: the import window’s target key for the user', () => {
    expect(check(request, activity('ACTIVITY_TYPE_INIT_IMPORT_WALLET', { userId: 'u' }))).toEqual({ facts: undefined })
  })

  test('error: no user, or another activity (the import itself needs its own review)', () => {
    expect(check(request, activity('ACTIVITY_TYPE_INIT_IMPORT_WALLET', {}))).toEqual(refused('the payload names no user to import for'))
    expect(check(request, activity('ACTIVITY_TYPE_IMPORT_WALLET', { userId: 'u', walletName: 'x', encryptedBundle: '{}' }))).toEqual(
      refused('the payload is not the start of a wallet import (ACTIVITY_TYPE_INIT_IMPORT_WALLET), it is ACTIVITY_TYPE_IMPORT_WALLET'),
    )
  })
})

describe('wallet_grantPermissions', () => {
  const expiry = Math.floor(Date.now() / 1000) + 3600
  const request = {
    method: 'wallet_grantPermissions',
    params: [
      {
        chainId: '0x7a69',
        expiry,
        permissions: [
          { type: 'native-token-recurring-allowance', data: { allowance: '0x2386f26fc10000', period: 86400 } },
          { type: 'contract-call', data: { address: token, calls: ['transfer(address,uint256)'] } },
        ],
      },
    ],
  }
  const grant = {
    chainId: '31337',
    account,
    expiry: String(expiry),
    permissions: [
      { type: 'native-token-recurring-allowance', data: { allowance: '10000000000000000', start: '0', period: '86400' } },
      { type: 'contract-call', data: { address: token.toLowerCase(), calls: ['0xa9059cbb'] } },
    ],
  }
  const body = (parameters: Record<string, unknown> = {}) =>
    activity('ACTIVITY_TYPE_LATCHKEY_CREATE_GRANT', { userId: 'user', apiKey: { apiKeyName: 'grant', publicKey: '' }, grant, ...parameters })

  test('default: create_grant of exactly the grant shown, its key left for the frame to make', () => {
    expect(check(request, body())).toEqual({
      facts: { rows: [{ label: 'Signs', value: 'inside these limits until it expires, without asking you again' }] },
    })
  })

  test('error: refuses a body that grants more, for another account, names its own key, or is not create_grant', () => {
    const more = {
      ...grant,
      permissions: [{ type: 'native-token-recurring-allowance', data: { allowance: '20000000000000000', start: '0', period: '86400' } }],
    }
    expect(check(request, body({ grant: more }))).toEqual(refused('the payload does not create the grant shown'))
    expect(check(request, body({ grant: { ...grant, account: other } }))).toEqual(refused(`the grant is not for the account ${account}`))
    expect(check(request, body({ apiKey: { apiKeyName: 'grant', publicKey: `02${'11'.repeat(32)}` } }))).toEqual(
      refused("the grant's key must be left for this frame to make: apiKey {apiKeyName, publicKey: ''}"),
    )
    expect(check(request, activity('ACTIVITY_TYPE_CREATE_API_KEYS', { userId: 'user' }))).toEqual(
      refused('the payload is not a grant (ACTIVITY_TYPE_LATCHKEY_CREATE_GRANT), it is ACTIVITY_TYPE_CREATE_API_KEYS'),
    )
  })

  test('error: a grant request without an expiry, or of an unknown type, is refused before anything is shown', () => {
    const { expiry: _, ...noExpiry } = request.params[0]!
    // A ReviewError: the frame answers it -32602 with this message (consent.ts), as for a request that does not decode.
    expect(check({ ...request, params: [noExpiry] }, body())).toEqual({
      code: 'GRANT_WITHOUT_EXPIRY',
      message: 'The grant has no expiry: a permission that never ends is refused',
    })
    expect(check({ ...request, params: [{ ...request.params[0], permissions: [{ type: 'native-token-stream', data: {} }] }] }, body())).toEqual({
      code: 'UNKNOWN_PERMISSION',
      message:
        'Unknown permission type "native-token-stream": the wallet can grant only native-token-recurring-allowance, erc20-recurring-allowance, native-token-periodic, erc20-token-periodic, contract-call',
    })
  })

  test('error: a grant request with two allowances for one asset is refused before anything is shown or stamped', () => {
    const twice = {
      ...request.params[0],
      permissions: [
        { type: 'native-token-recurring-allowance', data: { allowance: '0x8ac7230489e80000', period: 86400 } },
        { type: 'native-token-periodic', data: { periodAmount: '0xde0b6b3a7640000', periodDuration: 3600 } },
      ],
    }
    const both = {
      ...grant,
      permissions: [
        { type: 'native-token-recurring-allowance', data: { allowance: '10000000000000000000', start: '0', period: '86400' } },
        { type: 'native-token-recurring-allowance', data: { allowance: '1000000000000000000', start: '0', period: '3600' } },
      ],
    }
    expect(check({ ...request, params: [twice] }, body({ grant: both }))).toEqual({
      code: 'MALFORMED_GRANT',
      message: 'The grant asks for two allowances for ETH: a grant limits each token once',
    })
  })
})

describe('any other method', () => {
  test('error: refused whatever its payload', () => {
    const body = activity('ACTIVITY_TYPE_SIGN_RAW_PAYLOAD_V2', {
      signWith: account,
      payload: hashMessage('x'),
      encoding: 'PAYLOAD_ENCODING_HEXADECIMAL',
      hashFunction: 'HASH_FUNCTION_NO_OP',
    })
    expect(
      (() => {
        try {
          return assertPayloadMatches(
            { request: { method: 'wallet_watchAsset', params: [{}] } as never, payload: body, context: { account, chainId } },
            settings,
          )
        } catch (error) {
          return { code: (error as { code?: number }).code, message: (error as Error).message }
        }
      })(),
    ).toEqual(refused('wallet_watchAsset cannot be stamped by this frame'))
    expect(check({ method: 'eth_sendTransaction', params: [{}] }, 'not json')).toEqual(refused('the payload is not a JSON kms request'))
    expect(check({ method: 'eth_sendTransaction', params: [{}] }, '{"type":"x"}')).toEqual(refused('the payload is not a kms activity'))
  })
})

describe('the frame’s configuration', () => {
  const config = parseConsentConfig({ chains: '31337=http://127.0.0.1:8545 31338=http://127.0.0.1:8546 0=http://x 7=ftp://x junk', executor })

  test('default: the kms’s chains and executor, read from the page', () => {
    expect(config).toEqual({
      chains: new Map([
        [31337, 'http://127.0.0.1:8545'],
        [31338, 'http://127.0.0.1:8546'],
      ]),
      executor,
      paymasters: new Map(),
      appName: undefined,
    })
    expect(parseConsentConfig({ chains: '', executor: 'nobody' })).toEqual({
      chains: new Map(),
      executor: undefined,
      paymasters: new Map(),
      appName: undefined,
    })
    expect(chainRpc(config, 'personal_sign', 1)).toBeUndefined()
    expect(chainRpc(config, 'eth_sendTransaction', 31337)).toBeTypeOf('function')
  })

  test('behavior: the app’s paymasters by chain and kind, and its name; entries that do not parse are left out', () => {
    const sponsor = '0x5050505050505050505050505050505050505050'
    const tokenPaymaster = '0x7070707070707070707070707070707070707070'
    const parsed = parseConsentConfig({
      chains: '',
      executor,
      paymasters: `31337=sponsor:${sponsor} 31337=token:${tokenPaymaster} 31338=token:${tokenPaymaster} 1=other:${sponsor} 2=sponsor:0x12 junk`,
      appName: '  Demo App ',
    })
    expect([parsed.paymasters, parsed.appName]).toEqual([
      new Map([
        [31337, { sponsor, token: tokenPaymaster }],
        [31338, { token: tokenPaymaster }],
      ]),
      'Demo App',
    ])
  })

  test('error: a transaction or batch on a chain the kms configured no RPC for is refused', () => {
    for (const method of ['eth_sendTransaction', 'wallet_sendCalls'] as const)
      expect(() => chainRpc(config, method, 1)).toThrow(
        'this frame has no RPC for chain 1 (kms setting --frames-chain), so it cannot review a transaction there',
      )
  })
})
