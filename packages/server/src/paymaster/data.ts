// What Latchkey's two paymasters read from a UserOperation's `paymasterData` and which EIP-712
// message the paymaster service signs for each. The contracts (`contracts/SponsorPaymaster.sol`,
// `contracts/TokenPaymaster.sol`) check the same bytes: OpenZeppelin's `PaymasterSigner` for the
// sponsored one, our `_fetchDetails` over OpenZeppelin's `PaymasterERC20Guarantor` for gas in tokens.
import { type Address, concatHex, getAddress, type Hex, hexToBigInt, hexToNumber, numberToHex, size, sliceHex, type TypedDataDomain } from 'viem'
import { toPackedUserOperation, type UserOperation } from 'viem/account-abstraction'

/** EIP-712 domain names of the two paymasters (version `1`, the chain id, the paymaster's address). */
export const SPONSOR_PAYMASTER_NAME = 'Latchkey Sponsor Paymaster'
export const TOKEN_PAYMASTER_NAME = 'Latchkey Token Paymaster'

/** The fields of a packed UserOperation both signed messages cover (OpenZeppelin's `UserOperationRequest`). */
const USER_OPERATION_REQUEST = [
  { name: 'sender', type: 'address' },
  { name: 'nonce', type: 'uint256' },
  { name: 'initCode', type: 'bytes' },
  { name: 'callData', type: 'bytes' },
  { name: 'accountGasLimits', type: 'bytes32' },
  { name: 'preVerificationGas', type: 'uint256' },
  { name: 'gasFees', type: 'bytes32' },
  { name: 'paymasterVerificationGasLimit', type: 'uint256' },
  { name: 'paymasterPostOpGasLimit', type: 'uint256' },
  { name: 'validAfter', type: 'uint48' },
  { name: 'validUntil', type: 'uint48' },
] as const

/** OpenZeppelin `PaymasterSigner`'s message, type for type (its `USER_OPERATION_REQUEST_TYPEHASH`). */
export const SPONSOR_TYPES = { UserOperationRequest: USER_OPERATION_REQUEST } as const

/** The token paymaster's message: the same fields, then the token, its price and the guarantor. */
export const TOKEN_TYPES = {
  TokenUserOperationRequest: [
    ...USER_OPERATION_REQUEST,
    { name: 'token', type: 'address' },
    { name: 'tokenPerNative', type: 'uint256' },
    { name: 'guarantor', type: 'address' },
  ],
} as const

/** A sponsorship's validity window, in seconds since the epoch (ERC-4337 `validAfter`, `validUntil`). */
export type ValidityWindow = { validAfter: number; validUntil: number }

/**
 * A quote for gas paid in tokens: `tokenPerNative` token units per 1e18 wei (OpenZeppelin's
 * `PaymasterERC20` unit), and the guarantor that prefunds when the account has not approved the
 * paymaster yet (`0x000…0`: the account prefunds itself).
 */
export type TokenQuote = { token: Address; tokenPerNative: bigint; guarantor: Address }

/** The UserOperation fields the paymaster signs over, with its gas limits already set. */
export type SignedUserOperation = Pick<
  UserOperation<'0.8'>,
  | 'sender'
  | 'nonce'
  | 'factory'
  | 'factoryData'
  | 'callData'
  | 'callGasLimit'
  | 'verificationGasLimit'
  | 'preVerificationGas'
  | 'maxFeePerGas'
  | 'maxPriorityFeePerGas'
  | 'paymasterVerificationGasLimit'
  | 'paymasterPostOpGasLimit'
>

function domain(name: string, chainId: number, paymaster: Address): TypedDataDomain {
  return { name, version: '1', chainId, verifyingContract: paymaster }
}

function requestFields(userOperation: SignedUserOperation, window: ValidityWindow) {
  const packed = toPackedUserOperation({ ...userOperation, signature: '0x' } as UserOperation<'0.8'>)
  return {
    sender: packed.sender,
    nonce: packed.nonce,
    initCode: packed.initCode,
    callData: packed.callData,
    accountGasLimits: packed.accountGasLimits,
    preVerificationGas: packed.preVerificationGas,
    gasFees: packed.gasFees,
    paymasterVerificationGasLimit: userOperation.paymasterVerificationGasLimit ?? 0n,
    paymasterPostOpGasLimit: userOperation.paymasterPostOpGasLimit ?? 0n,
    validAfter: window.validAfter,
    validUntil: window.validUntil,
  }
}

/**
 * The EIP-712 message the sponsor paymaster's signer signs for one UserOperation.
 *
 * @example
 * const signature = await signer.signTypedData(sponsorTypedData({ chainId, paymaster, userOperation, validAfter: 0, validUntil }))
 */
export function sponsorTypedData(parameters: { chainId: number; paymaster: Address; userOperation: SignedUserOperation } & ValidityWindow) {
  return {
    domain: domain(SPONSOR_PAYMASTER_NAME, parameters.chainId, parameters.paymaster),
    types: SPONSOR_TYPES,
    primaryType: 'UserOperationRequest' as const,
    message: requestFields(parameters.userOperation, parameters),
  }
}

/**
 * The EIP-712 message the token paymaster's signer signs: the UserOperation and the quote.
 *
 * @example
 * const signature = await signer.signTypedData(tokenTypedData({ chainId, paymaster, userOperation, validAfter: 0, validUntil, ...quote }))
 */
export function tokenTypedData(parameters: { chainId: number; paymaster: Address; userOperation: SignedUserOperation } & ValidityWindow & TokenQuote) {
  return {
    domain: domain(TOKEN_PAYMASTER_NAME, parameters.chainId, parameters.paymaster),
    types: TOKEN_TYPES,
    primaryType: 'TokenUserOperationRequest' as const,
    message: {
      ...requestFields(parameters.userOperation, parameters),
      token: parameters.token,
      tokenPerNative: parameters.tokenPerNative,
      guarantor: parameters.guarantor,
    },
  }
}

const uint48 = (value: number) => numberToHex(value, { size: 6 })

/**
 * The sponsor paymaster's `paymasterData`: `validAfter` (6 bytes) ‖ `validUntil` (6) ‖ signature,
 * as OpenZeppelin's `PaymasterSigner._decodePaymasterUserOp` reads it.
 *
 * @example
 * encodeSponsorData({ validAfter: 0, validUntil: 1_800_000_000, signature })
 */
export function encodeSponsorData(data: ValidityWindow & { signature: Hex }): Hex {
  return concatHex([uint48(data.validAfter), uint48(data.validUntil), data.signature])
}

/** The inverse of {@link encodeSponsorData}; `undefined` for data too short to hold the window. */
export function decodeSponsorData(data: Hex): (ValidityWindow & { signature: Hex }) | undefined {
  if (size(data) < 12) return undefined
  return {
    validAfter: hexToNumber(sliceHex(data, 0, 6)),
    validUntil: hexToNumber(sliceHex(data, 6, 12)),
    signature: size(data) === 12 ? '0x' : sliceHex(data, 12),
  }
}

/**
 * The token paymaster's `paymasterData`: `validAfter` (6) ‖ `validUntil` (6) ‖ token (20) ‖
 * `tokenPerNative` (32) ‖ guarantor (20) ‖ signature.
 *
 * @example
 * encodeTokenData({ validAfter: 0, validUntil, token, tokenPerNative: 10n ** 21n, guarantor: zeroAddress, signature })
 */
export function encodeTokenData(data: ValidityWindow & TokenQuote & { signature: Hex }): Hex {
  return concatHex([
    uint48(data.validAfter),
    uint48(data.validUntil),
    data.token,
    numberToHex(data.tokenPerNative, { size: 32 }),
    data.guarantor,
    data.signature,
  ])
}

/** The inverse of {@link encodeTokenData}; `undefined` for data too short to hold the quote. */
export function decodeTokenData(data: Hex): (ValidityWindow & TokenQuote & { signature: Hex }) | undefined {
  if (size(data) < 84) return undefined
  return {
    validAfter: hexToNumber(sliceHex(data, 0, 6)),
    validUntil: hexToNumber(sliceHex(data, 6, 12)),
    token: getAddress(sliceHex(data, 12, 32)),
    tokenPerNative: hexToBigInt(sliceHex(data, 32, 64)),
    guarantor: getAddress(sliceHex(data, 64, 84)),
    signature: size(data) === 84 ? '0x' : sliceHex(data, 84),
  }
}
