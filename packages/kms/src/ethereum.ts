import { bytesToHex, hashTypedData, type Hex, isHex, keccak256, parseTransaction, sha256, toHex, type TransactionSerializable } from 'viem'
import { english, generateMnemonic, mnemonicToAccount, privateKeyToAccount } from 'viem/accounts'
import { GrpcCode, KmsError } from './errors.js'

/** The account parameters of create_wallet and create_wallet_accounts. */
export type AccountParams = { curve: string; pathFormat: string; path: string; addressFormat: string }

/** An account derived from a wallet's mnemonic. */
export type DerivedAccount = AccountParams & { address: string; publicKey: string }

const invalid = (message: string) => new KmsError(GrpcCode.invalidArgument, message)

/** A new BIP-39 mnemonic of 12, 15, 18, 21 or 24 words. */
export function newMnemonic(words = 12): string {
  const strength = { 12: 128, 15: 160, 18: 192, 21: 224, 24: 256 }[words]
  if (!strength) throw invalid(`mnemonicLength must be 12, 15, 18, 21 or 24, got ${words}`)
  return generateMnemonic(english, strength)
}

// Deriving from a mnemonic runs PBKDF2; signing keys are kept once derived.
const derived = new Map<string, Hex>()

/** The private key at `path` of `mnemonic` (BIP-32 over the BIP-39 seed). */
export const privateKeyOf = (mnemonic: string, path: string): Hex => privateKeyAt(mnemonic, path)

function privateKeyAt(mnemonic: string, path: string): Hex {
  const cacheKey = `${mnemonic}\n${path}`
  let key = derived.get(cacheKey)
  if (!key) {
    const hd = mnemonicToAccount(mnemonic, { path: path as `m/44'/60'/${string}` }).getHdKey()
    if (!hd.privateKey) throw new KmsError(GrpcCode.internal, `no private key at ${path}`)
    key = bytesToHex(hd.privateKey)
    if (derived.size > 10_000) derived.clear()
    derived.set(cacheKey, key)
  }
  return key
}

/**
 * Derives an account: secp256k1 keys on a BIP-32 path, with an Ethereum address (or the public
 * key itself, for the compressed and uncompressed address formats).
 */
export function deriveAccount(mnemonic: string, params: AccountParams): DerivedAccount {
  if (params.curve !== 'CURVE_SECP256K1') throw invalid(`unsupported curve ${params.curve}: this service signs with CURVE_SECP256K1`)
  if (params.pathFormat !== 'PATH_FORMAT_BIP32') throw invalid(`unsupported path format ${params.pathFormat}`)
  if (!/^m(\/\d+'?)+$/.test(params.path)) throw invalid(`invalid BIP-32 path ${params.path}`)
  const account = privateKeyToAccount(privateKeyAt(mnemonic, params.path))
  const uncompressed = account.publicKey
  const compressed = compress(uncompressed)
  const address = {
    ADDRESS_FORMAT_ETHEREUM: account.address,
    ADDRESS_FORMAT_COMPRESSED: compressed.slice(2),
    ADDRESS_FORMAT_UNCOMPRESSED: uncompressed.slice(2),
  }[params.addressFormat]
  if (!address) throw invalid(`unsupported address format ${params.addressFormat}`)
  return { ...params, address, publicKey: compressed.slice(2) }
}

function compress(uncompressed: Hex): Hex {
  const y = BigInt(`0x${uncompressed.slice(-64)}`)
  return `0x${y % 2n === 0n ? '02' : '03'}${uncompressed.slice(4, 68)}`
}

/** The 32 bytes to sign for a sign_raw_payload request. */
export function digestOf(payload: string, encoding: string, hashFunction: string): Hex {
  if (encoding === 'PAYLOAD_ENCODING_EIP712') {
    let typed: Parameters<typeof hashTypedData>[0]
    try {
      typed = JSON.parse(payload)
      return hashTypedData(typed)
    } catch (error) {
      throw invalid(`payload is not EIP-712 typed data: ${(error as Error).message}`)
    }
  }
  let bytes: Hex
  if (encoding === 'PAYLOAD_ENCODING_HEXADECIMAL') {
    const hex = (payload.startsWith('0x') ? payload : `0x${payload}`) as Hex
    if (!isHex(hex) || hex.length % 2) throw invalid('payload is not hexadecimal')
    bytes = hex
  } else if (encoding === 'PAYLOAD_ENCODING_TEXT_UTF8') bytes = toHex(payload)
  else throw invalid(`unsupported payload encoding ${encoding}`)
  switch (hashFunction) {
    case 'HASH_FUNCTION_NO_OP':
    case 'HASH_FUNCTION_NOT_APPLICABLE':
      if (bytes.length !== 66) throw invalid('with HASH_FUNCTION_NO_OP the payload must be exactly 32 bytes')
      return bytes
    case 'HASH_FUNCTION_KECCAK256':
      return keccak256(bytes)
    case 'HASH_FUNCTION_SHA256':
      return sha256(bytes)
    default:
      throw invalid(`unsupported hash function ${hashFunction}`)
  }
}

/** r, s (64 hex digits each) and v ("00" or "01", the y parity), without 0x: what the clients read. */
export async function signDigest(mnemonic: string, path: string, digest: Hex): Promise<{ r: string; s: string; v: string }> {
  const signature = await privateKeyToAccount(privateKeyAt(mnemonic, path)).sign({ hash: digest })
  const v = Number.parseInt(signature.slice(130, 132), 16)
  return { r: signature.slice(2, 66), s: signature.slice(66, 130), v: v === 27 || v === 0 ? '00' : '01' }
}

/** Signs an unsigned serialized Ethereum transaction (legacy, EIP-2930, EIP-1559, EIP-7702); hex without 0x. */
export async function signTransaction(mnemonic: string, path: string, unsignedTransaction: string): Promise<string> {
  const hex = (unsignedTransaction.startsWith('0x') ? unsignedTransaction : `0x${unsignedTransaction}`) as Hex
  let transaction: TransactionSerializable
  try {
    transaction = parseTransaction(hex) as TransactionSerializable
  } catch (error) {
    throw invalid(`unsignedTransaction is not a serialized Ethereum transaction: ${(error as Error).message.split('\n')[0]}`)
  }
  const signed = await privateKeyToAccount(privateKeyAt(mnemonic, path)).signTransaction(transaction)
  return signed.slice(2)
}
