import type { TurnkeyClient } from '@turnkey/http'
import { createAccount } from '@turnkey/viem'
import {
  type Hex,
  hashMessage,
  parseEther,
  recoverAddress,
  recoverTransactionAddress,
  serializeSignature,
  serializeTransaction,
  type TransactionSerialized,
  toPrefixedMessage,
} from 'viem'
import { privateKeyToAddress } from 'viem/accounts'
import { afterAll, beforeAll, expect, test } from 'vitest'
import { OPAQUE_HASH_REFUSED, startKms } from './harness.js'

// Signing with private keys: sign_raw_payload and sign_transaction name one by its id or by an
// address, as @turnkey/viem does; every signature is checked with viem.

let harness: Awaited<ReturnType<typeof startKms>>
beforeAll(async () => {
  harness = await startKms()
})
afterAll(() => harness.kms.stop())

const signRawPayload = (client: TurnkeyClient, organizationId: string, signWith: string, payload: Hex) =>
  client.signRawPayload({
    type: 'ACTIVITY_TYPE_SIGN_RAW_PAYLOAD_V2',
    timestampMs: harness.timestampMs(),
    organizationId,
    // The EIP-191 preimage, hashed by the kms: a sub-organization signs no opaque hash, nor unframed bytes.
    parameters: { signWith, payload: toPrefixedMessage({ raw: payload }), encoding: 'PAYLOAD_ENCODING_HEXADECIMAL', hashFunction: 'HASH_FUNCTION_KECCAK256' },
  })

/** The address that signed `payload` as an EIP-191 message, from a sign_raw_payload result. */
async function signerOf(payload: Hex, result: { r: string; s: string; v: string }) {
  return recoverAddress({
    hash: hashMessage({ raw: payload }),
    signature: serializeSignature({ r: `0x${result.r}`, s: `0x${result.s}`, yParity: Number(result.v) }),
  })
}

test('default: sign_raw_payload names the key by id or by address; viem recovers its address', async () => {
  const sub = await harness.subOrganization()
  const key = await harness.createPrivateKey(sub.client, sub.organizationId, 'signer')
  const hash = hashMessage('held on its own')
  for (const signWith of [key.privateKeyId, key.address, key.address.toLowerCase()])
    expect(await signerOf(hash, (await signRawPayload(sub.client, sub.organizationId, signWith, hash)).activity.result.signRawPayloadResult!)).toBe(key.address)
  // The wallet's own account still signs as itself.
  expect(await signerOf(hash, (await signRawPayload(sub.client, sub.organizationId, sub.address, hash)).activity.result.signRawPayloadResult!)).toBe(
    sub.address,
  )
})

test('behavior: @turnkey/viem signs a transaction with a private key id (its signMessage, an opaque hash, is refused in a sub-organization); sign_transaction takes its address', async () => {
  const sub = await harness.subOrganization()
  const key = await harness.createPrivateKey(sub.client, sub.organizationId, 'viem')
  // @turnkey/viem looks the address up with get_private_key.
  const account = await createAccount({
    client: sub.client as unknown as Parameters<typeof createAccount>[0]['client'],
    organizationId: sub.organizationId,
    signWith: key.privateKeyId,
  })
  expect(account.address).toBe(key.address)
  await expect(account.signMessage({ message: 'private key' })).rejects.toThrow(OPAQUE_HASH_REFUSED)
  const signed = await account.signTransaction({
    chainId: 31337,
    type: 'eip1559',
    to: '0x000000000000000000000000000000000000dEaD',
    value: parseEther('0.001'),
    nonce: 0,
    gas: 21000n,
    maxFeePerGas: 2_000_000_000n,
    maxPriorityFeePerGas: 1_000_000n,
  })
  expect(await recoverTransactionAddress({ serializedTransaction: signed as TransactionSerialized })).toBe(key.address)
  const raw = await sub.client.signTransaction({
    type: 'ACTIVITY_TYPE_SIGN_TRANSACTION_V2',
    timestampMs: harness.timestampMs(),
    organizationId: sub.organizationId,
    parameters: {
      signWith: key.address,
      type: 'TRANSACTION_TYPE_ETHEREUM',
      unsignedTransaction: serializeTransaction({
        chainId: 31337,
        to: '0x000000000000000000000000000000000000dEaD',
        value: 1n,
        nonce: 1,
        gas: 21000n,
        gasPrice: 1n,
      }).slice(2),
    },
  })
  expect(
    await recoverTransactionAddress({ serializedTransaction: `0x${raw.activity.result.signTransactionResult!.signedTransaction}` as TransactionSerialized }),
  ).toBe(key.address)
})

test('behavior: an imported key signs as its own address', async () => {
  const sub = await harness.subOrganization()
  const { secret, importKey } = await harness.prepareImport(sub)
  const imported = await importKey()
  const hash = hashMessage('imported')
  const { privateKeyId } = imported.activity.result.importPrivateKeyResult!
  expect(await signerOf(hash, (await signRawPayload(sub.client, sub.organizationId, privateKeyId, hash)).activity.result.signRawPayloadResult!)).toBe(
    privateKeyToAddress(secret),
  )
})

test('error: a deleted key, or a key of another organization, cannot be named', async () => {
  const [alice, bob] = [await harness.subOrganization(), await harness.subOrganization()]
  const key = await harness.createPrivateKey(alice.client, alice.organizationId, 'alice only')
  const hash = hashMessage('x')
  await expect(signRawPayload(bob.client, bob.organizationId, key.privateKeyId, hash)).rejects.toThrow(
    `Turnkey error 5: no wallet account with address ${key.privateKeyId} in organization ${bob.organizationId}`,
  )
  await expect(signRawPayload(bob.client, bob.organizationId, key.address, hash)).rejects.toThrow(
    `Turnkey error 5: no wallet account with address ${key.address} in organization ${bob.organizationId}`,
  )
  await alice.client.deletePrivateKeys({
    type: 'ACTIVITY_TYPE_DELETE_PRIVATE_KEYS',
    timestampMs: harness.timestampMs(),
    organizationId: alice.organizationId,
    parameters: { privateKeyIds: [key.privateKeyId], deleteWithoutExport: true },
  })
  await expect(signRawPayload(alice.client, alice.organizationId, key.address, hash)).rejects.toThrow(
    `Turnkey error 5: no wallet account with address ${key.address} in organization ${alice.organizationId}`,
  )
})
