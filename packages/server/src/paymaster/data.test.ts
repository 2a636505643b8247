import { type Address, encodeAbiParameters, hashStruct, keccak256, toHex, zeroAddress } from 'viem'
import { describe, expect, test } from 'vitest'
import { decodeSponsorData, decodeTokenData, encodeSponsorData, encodeTokenData, SPONSOR_TYPES, sponsorTypedData, TOKEN_TYPES, tokenTypedData } from './data.js'

const userOperation = {
  sender: '0x70997970C51812dc3A010C7d01b50e0d17dc79C8',
  nonce: 7n,
  factory: '0x7702',
  factoryData: '0x',
  callData: '0xdeadbeef',
  callGasLimit: 100_000n,
  verificationGasLimit: 200_000n,
  preVerificationGas: 50_000n,
  maxFeePerGas: 3_000_000_000n,
  maxPriorityFeePerGas: 1_000_000_000n,
  paymasterVerificationGasLimit: 60_000n,
  paymasterPostOpGasLimit: 40_000n,
} as const
const signature = toHex(new Uint8Array(65).fill(7))
const token: Address = '0xf0F3A2044dEC38152A467aD6ABaC0AB98e50516d'

describe('paymasterData', () => {
  test('sponsor data round-trips in the layout PaymasterSigner reads (6 + 6 + signature)', () => {
    const data = encodeSponsorData({ validAfter: 1, validUntil: 1_800_000_000, signature })
    expect(data.slice(0, 26)).toBe('0x00000000000100006b49d200')
    expect(decodeSponsorData(data)).toEqual({ validAfter: 1, validUntil: 1_800_000_000, signature })
  })

  test('token data round-trips (6 + 6 + 20 + 32 + 20 + signature)', () => {
    const quote = { validAfter: 0, validUntil: 99, token, tokenPerNative: 10n ** 21n, guarantor: zeroAddress, signature }
    const data = encodeTokenData(quote)
    expect((data.length - 2) / 2).toBe(84 + 65)
    expect(decodeTokenData(data)).toEqual(quote)
  })

  test('error: data too short to hold the window or the quote decodes to undefined', () => {
    expect(decodeSponsorData('0x0000000000')).toBeUndefined()
    expect(decodeTokenData(encodeSponsorData({ validAfter: 0, validUntil: 1, signature }))).toBeUndefined()
  })
})

describe('typed data', () => {
  test("the sponsor message is OpenZeppelin PaymasterSigner's UserOperationRequest, field for field", () => {
    const { message } = sponsorTypedData({ chainId: 31337, paymaster: zeroAddress, userOperation, validAfter: 0, validUntil: 99 })
    const typeHash = keccak256(
      toHex(
        'UserOperationRequest(address sender,uint256 nonce,bytes initCode,bytes callData,bytes32 accountGasLimits,uint256 preVerificationGas,bytes32 gasFees,uint256 paymasterVerificationGasLimit,uint256 paymasterPostOpGasLimit,uint48 validAfter,uint48 validUntil)',
      ),
    )
    const byHand = keccak256(
      encodeAbiParameters(
        [
          { type: 'bytes32' },
          { type: 'address' },
          { type: 'uint256' },
          { type: 'bytes32' },
          { type: 'bytes32' },
          { type: 'bytes32' },
          { type: 'uint256' },
          { type: 'bytes32' },
          { type: 'uint256' },
          { type: 'uint256' },
          { type: 'uint48' },
          { type: 'uint48' },
        ],
        [
          typeHash,
          message.sender,
          message.nonce,
          keccak256(message.initCode),
          keccak256(message.callData),
          message.accountGasLimits,
          message.preVerificationGas,
          message.gasFees,
          message.paymasterVerificationGasLimit,
          message.paymasterPostOpGasLimit,
          0,
          99,
        ],
      ),
    )
    expect(hashStruct({ types: SPONSOR_TYPES, primaryType: 'UserOperationRequest', data: message })).toBe(byHand)
    // EntryPoint v0.8's 7702 marker as viem packs it (the EntryPoint reads it as bytes20).
    expect(message.initCode).toBe('0x7702')
    expect(message.accountGasLimits).toBe(`0x${200_000n.toString(16).padStart(32, '0')}${100_000n.toString(16).padStart(32, '0')}`)
  })

  test('the token message adds the token, its price and the guarantor to the same fields', () => {
    const typed = tokenTypedData({
      chainId: 31337,
      paymaster: zeroAddress,
      userOperation,
      validAfter: 0,
      validUntil: 99,
      token,
      tokenPerNative: 5n,
      guarantor: zeroAddress,
    })
    expect(TOKEN_TYPES.TokenUserOperationRequest.map((field) => field.name).slice(-3)).toEqual(['token', 'tokenPerNative', 'guarantor'])
    expect(typed.message).toMatchObject({ token, tokenPerNative: 5n, guarantor: zeroAddress, validUntil: 99 })
  })
})
