import { BATCH_EXECUTOR_ADDRESS } from '@latchkey/devnet'
import type { TurnkeyClient } from '@turnkey/http'
import {
  concat,
  getTypesForEIP712Domain,
  type Hex,
  hashDomain,
  hashMessage,
  hashStruct,
  hashTypedData,
  keccak256,
  parseEther,
  recoverAddress,
  recoverTypedDataAddress,
  serializeSignature,
  serializeTransaction,
  serializeTypedData,
  toPrefixedMessage,
  toRlp,
} from 'viem'
import { recoverAuthorizationAddress } from 'viem/utils'
import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import { startKms } from './harness.js'

// A sub-organization (an embedded wallet's user) signs only what the kms can read, and delegates
// its account with EIP-7702 only to the configured executor on one chain (security review H1, fix
// 4). A parent organization's users keep opaque hashes.

const OTHER = '0x000000000000000000000000000000000000dEaD'
const OPAQUE =
  'Turnkey error 7: opaque hash refused: a sub-organization signs only what the kms can read: a message with HASH_FUNCTION_KECCAK256, PAYLOAD_ENCODING_EIP712 typed data or a PAYLOAD_ENCODING_EIP7702_AUTHORIZATION'
const UNFRAMED =
  'Turnkey error 7: unframed payload refused: a sub-organization hashes with HASH_FUNCTION_KECCAK256 only an EIP-191 message, whose first byte is 0x19 ("\\x19Ethereum Signed Message:\\n…" or "\\x19\\x01…"); a transaction is signed with sign_transaction'
const notDelegate = (address: string) => `Turnkey error 7: EIP-7702 delegation refused: ${address} is not an allowed delegate (--eip7702-delegate)`
const EVERY_CHAIN = 'Turnkey error 7: EIP-7702 delegation refused: an authorization for every chain (chainId 0) is not signed in a sub-organization'

let harness: Awaited<ReturnType<typeof startKms>>
let sub: Awaited<ReturnType<typeof harness.subOrganization>>
beforeAll(async () => {
  harness = await startKms({ eip7702Delegates: [BATCH_EXECUTOR_ADDRESS] })
  sub = await harness.subOrganization()
})
afterAll(() => harness.kms.stop())

const signRaw = (client: TurnkeyClient, organizationId: string, signWith: string, payload: string, encoding: string, hashFunction: string) =>
  client.signRawPayload({
    type: 'ACTIVITY_TYPE_SIGN_RAW_PAYLOAD_V2',
    timestampMs: harness.timestampMs(),
    organizationId,
    parameters: { signWith, payload, encoding: encoding as never, hashFunction: hashFunction as never },
  })

/** sign_raw_payloads of `payloads` by the sub-organization's root key, as its account. */
const signRawBatch = (payloads: string[], encoding: string, hashFunction: string) =>
  sub.client.signRawPayloads({
    type: 'ACTIVITY_TYPE_SIGN_RAW_PAYLOADS',
    timestampMs: harness.timestampMs(),
    organizationId: sub.organizationId,
    parameters: { signWith: sub.address, payloads, encoding: encoding as never, hashFunction: hashFunction as never },
  })

const signatureOf = (result: { r: string; s: string; v: string }) => serializeSignature({ r: `0x${result.r}`, s: `0x${result.s}`, yParity: Number(result.v) })

const activityCount = async (organizationId: string) => (await harness.backend.getActivities({ organizationId })).activities.length

const authorization = (address: string, chainId: number) => JSON.stringify({ address, chainId, nonce: 0 })

/** An unsigned type-4 transaction from the account to itself, delegating to `address` on `chainId`. */
const delegatingTransaction = (address: Hex, chainId: number) =>
  serializeTransaction({
    type: 'eip7702',
    chainId: 31337,
    nonce: 0,
    to: sub.address,
    maxFeePerGas: 2_000_000_000n,
    maxPriorityFeePerGas: 1_000_000_000n,
    gas: 100_000n,
    authorizationList: [{ address, chainId, nonce: 1, r: `0x${'00'.repeat(31)}01`, s: `0x${'00'.repeat(31)}01`, yParity: 0 }],
  }).slice(2)

const signTransaction = (unsignedTransaction: string) =>
  sub.client.signTransaction({
    type: 'ACTIVITY_TYPE_SIGN_TRANSACTION_V2',
    timestampMs: harness.timestampMs(),
    organizationId: sub.organizationId,
    parameters: { signWith: sub.address, unsignedTransaction, type: 'TRANSACTION_TYPE_ETHEREUM' },
  })

describe('readable signing in sub-organizations', () => {
  test('error: refuses an opaque 32-byte hash (NO_OP, or NOT_APPLICABLE on hexadecimal or text), alone or in a batch, and writes nothing', async () => {
    const hash = hashMessage('anything at all')
    const before = await activityCount(sub.organizationId)
    for (const [encoding, hashFunction] of [
      ['PAYLOAD_ENCODING_HEXADECIMAL', 'HASH_FUNCTION_NO_OP'],
      ['PAYLOAD_ENCODING_HEXADECIMAL', 'HASH_FUNCTION_NOT_APPLICABLE'],
      ['PAYLOAD_ENCODING_TEXT_UTF8', 'HASH_FUNCTION_NO_OP'],
      ['PAYLOAD_ENCODING_TEXT_UTF8', 'HASH_FUNCTION_NOT_APPLICABLE'],
    ] as const)
      await expect(signRaw(sub.client, sub.organizationId, sub.address, hash, encoding, hashFunction), `${encoding} ${hashFunction}`).rejects.toThrow(OPAQUE)
    await expect(signRawBatch([hash], 'PAYLOAD_ENCODING_HEXADECIMAL', 'HASH_FUNCTION_NO_OP')).rejects.toThrow(OPAQUE)
    expect(await activityCount(sub.organizationId)).toBe(before)
  })

  test('behavior: a parent organization’s user still signs an opaque hash', async () => {
    const key = await harness.createPrivateKey(harness.backend, harness.parent.organizationId, 'backend signer')
    const hash = hashMessage('a backend signs what it chooses')
    const { activity } = await signRaw(harness.backend, harness.parent.organizationId, key.address, hash, 'PAYLOAD_ENCODING_HEXADECIMAL', 'HASH_FUNCTION_NO_OP')
    expect(await recoverAddress({ hash, signature: signatureOf(activity.result.signRawPayloadResult!) })).toBe(key.address)
  })

  test('behavior: the readable encodings sign: the EIP-191 preimage with KECCAK256, EIP-712 (NOT_APPLICABLE or NO_OP), an authorization to the executor', async () => {
    const message = 'Sign in to the demo'
    const preimage = toPrefixedMessage(message)
    const personal = await signRaw(sub.client, sub.organizationId, sub.address, preimage, 'PAYLOAD_ENCODING_HEXADECIMAL', 'HASH_FUNCTION_KECCAK256')
    expect(await recoverAddress({ hash: hashMessage(message), signature: signatureOf(personal.activity.result.signRawPayloadResult!) })).toBe(sub.address)

    const typed = {
      domain: { name: 'Demo', version: '1', chainId: 31337n },
      types: {
        // serializeTypedData keeps the domain only when its type is listed.
        EIP712Domain: [
          { name: 'name', type: 'string' },
          { name: 'version', type: 'string' },
          { name: 'chainId', type: 'uint256' },
        ],
        Mail: [{ name: 'contents', type: 'string' }],
      },
      primaryType: 'Mail',
      message: { contents: 'hello' },
    } as const
    for (const hashFunction of ['HASH_FUNCTION_NOT_APPLICABLE', 'HASH_FUNCTION_NO_OP']) {
      const { activity } = await signRaw(sub.client, sub.organizationId, sub.address, serializeTypedData(typed), 'PAYLOAD_ENCODING_EIP712', hashFunction)
      expect(await recoverTypedDataAddress({ ...typed, signature: signatureOf(activity.result.signRawPayloadResult!) })).toBe(sub.address)
    }

    const { activity } = await signRaw(
      sub.client,
      sub.organizationId,
      sub.address,
      authorization(BATCH_EXECUTOR_ADDRESS, 31337),
      'PAYLOAD_ENCODING_EIP7702_AUTHORIZATION',
      'HASH_FUNCTION_NOT_APPLICABLE',
    )
    const { r, s, v } = activity.result.signRawPayloadResult!
    const signed = { address: BATCH_EXECUTOR_ADDRESS, chainId: 31337, nonce: 0, r: `0x${r}`, s: `0x${s}`, yParity: Number(v) } as const
    expect(await recoverAuthorizationAddress({ authorization: signed })).toBe(sub.address)
    // A type-4 transaction delegating to the executor signs too.
    expect((await signTransaction(delegatingTransaction(BATCH_EXECUTOR_ADDRESS, 31337))).activity.status).toBe('ACTIVITY_STATUS_COMPLETED')
  })

  test('error: an authorization to another contract, or for chain id 0, is refused, as a payload, in a batch or in a type-4 transaction; nothing is written', async () => {
    const before = await activityCount(sub.organizationId)
    const asPayload = (payload: string) =>
      signRaw(sub.client, sub.organizationId, sub.address, payload, 'PAYLOAD_ENCODING_EIP7702_AUTHORIZATION', 'HASH_FUNCTION_NOT_APPLICABLE')
    await expect(asPayload(authorization(OTHER, 31337))).rejects.toThrow(notDelegate(OTHER))
    await expect(asPayload(authorization(BATCH_EXECUTOR_ADDRESS, 0))).rejects.toThrow(EVERY_CHAIN)
    await expect(
      signRawBatch(
        [authorization(BATCH_EXECUTOR_ADDRESS, 31337), authorization(OTHER, 31337)],
        'PAYLOAD_ENCODING_EIP7702_AUTHORIZATION',
        'HASH_FUNCTION_NOT_APPLICABLE',
      ),
    ).rejects.toThrow(notDelegate(OTHER))
    await expect(signTransaction(delegatingTransaction(OTHER, 31337))).rejects.toThrow(notDelegate(OTHER))
    await expect(signTransaction(delegatingTransaction(BATCH_EXECUTOR_ADDRESS, 0))).rejects.toThrow(EVERY_CHAIN)
    expect(await activityCount(sub.organizationId)).toBe(before)
  })

  test('error: with no delegate configured, every delegation in a sub-organization is refused', async () => {
    const bare = await startKms()
    try {
      const user = await bare.subOrganization()
      await expect(
        user.client.signRawPayload({
          type: 'ACTIVITY_TYPE_SIGN_RAW_PAYLOAD_V2',
          timestampMs: bare.timestampMs(),
          organizationId: user.organizationId,
          parameters: {
            signWith: user.address,
            payload: authorization(BATCH_EXECUTOR_ADDRESS, 31337),
            encoding: 'PAYLOAD_ENCODING_EIP7702_AUTHORIZATION',
            hashFunction: 'HASH_FUNCTION_NOT_APPLICABLE',
          },
        }),
      ).rejects.toThrow(notDelegate(BATCH_EXECUTOR_ADDRESS))
    } finally {
      await bare.kms.stop()
    }
  })

  test('error: refuses KECCAK256 over bytes that are not EIP-191 framed, such as a serialized transaction (its signing hash), alone or in a batch; nothing is written', async () => {
    const transfer = { chainId: 31337, nonce: 0, to: OTHER, value: parseEther('1'), gas: 21_000n } as const
    const eip1559 = serializeTransaction({ ...transfer, type: 'eip1559', maxFeePerGas: 2_000_000_000n, maxPriorityFeePerGas: 1n })
    const legacy = serializeTransaction({ ...transfer, type: 'legacy', gasPrice: 2_000_000_000n })
    const before = await activityCount(sub.organizationId)
    for (const [payload, encoding] of [
      [eip1559, 'PAYLOAD_ENCODING_HEXADECIMAL'],
      [eip1559.slice(2), 'PAYLOAD_ENCODING_HEXADECIMAL'],
      [legacy, 'PAYLOAD_ENCODING_HEXADECIMAL'],
      [toRlp(['0x01']), 'PAYLOAD_ENCODING_HEXADECIMAL'],
      ['0x', 'PAYLOAD_ENCODING_HEXADECIMAL'],
      ['Ethereum Signed Message without its 0x19', 'PAYLOAD_ENCODING_TEXT_UTF8'],
    ] as const)
      await expect(
        signRaw(sub.client, sub.organizationId, sub.address, payload, encoding, 'HASH_FUNCTION_KECCAK256'),
        `${payload} ${encoding}`,
      ).rejects.toThrow(UNFRAMED)
    await expect(signRawBatch([toPrefixedMessage('a message'), eip1559], 'PAYLOAD_ENCODING_HEXADECIMAL', 'HASH_FUNCTION_KECCAK256')).rejects.toThrow(UNFRAMED)
    expect(await activityCount(sub.organizationId)).toBe(before)
  })

  test('behavior: KECCAK256 over EIP-191 framed bytes signs: a personal message as text, EIP-712’s 0x19 0x01 preimage, both in one batch', async () => {
    const typed = {
      domain: { name: 'Demo', version: '1', chainId: 31337n },
      types: { Mail: [{ name: 'contents', type: 'string' }] },
      primaryType: 'Mail',
      message: { contents: 'hello' },
    } as const
    const typedPreimage = concat([
      '0x1901',
      hashDomain({ domain: typed.domain, types: { EIP712Domain: getTypesForEIP712Domain({ domain: typed.domain }) } } as Parameters<typeof hashDomain>[0]),
      hashStruct({ data: typed.message, primaryType: typed.primaryType, types: typed.types }),
    ])
    expect(keccak256(typedPreimage)).toBe(hashTypedData(typed))
    const text = await signRaw(
      sub.client,
      sub.organizationId,
      sub.address,
      '\x19Ethereum Signed Message:\n5hello',
      'PAYLOAD_ENCODING_TEXT_UTF8',
      'HASH_FUNCTION_KECCAK256',
    )
    expect(await recoverAddress({ hash: hashMessage('hello'), signature: signatureOf(text.activity.result.signRawPayloadResult!) })).toBe(sub.address)
    const { activity } = await signRawBatch([toPrefixedMessage('hello'), typedPreimage.slice(2)], 'PAYLOAD_ENCODING_HEXADECIMAL', 'HASH_FUNCTION_KECCAK256')
    const [personal, eip712] = activity.result.signRawPayloadsResult!.signatures!
    expect(await recoverAddress({ hash: hashMessage('hello'), signature: signatureOf(personal!) })).toBe(sub.address)
    expect(await recoverTypedDataAddress({ ...typed, signature: signatureOf(eip712!) })).toBe(sub.address)
  })

  test('behavior: a parent organization’s user still signs KECCAK256 over any bytes, a transaction’s included (Turnkey’s behaviour)', async () => {
    const key = await harness.createPrivateKey(harness.backend, harness.parent.organizationId, 'backend keccak signer')
    const transaction = serializeTransaction({
      chainId: 31337,
      type: 'eip1559',
      nonce: 0,
      to: OTHER,
      value: 1n,
      gas: 21_000n,
      maxFeePerGas: 2n,
      maxPriorityFeePerGas: 1n,
    })
    const { activity } = await signRaw(
      harness.backend,
      harness.parent.organizationId,
      key.address,
      transaction,
      'PAYLOAD_ENCODING_HEXADECIMAL',
      'HASH_FUNCTION_KECCAK256',
    )
    expect(await recoverAddress({ hash: keccak256(transaction), signature: signatureOf(activity.result.signRawPayloadResult!) })).toBe(key.address)
  })
})
