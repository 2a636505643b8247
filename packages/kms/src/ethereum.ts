import { pbkdf2 } from 'node:crypto'
import { setImmediate as nextTurn } from 'node:timers/promises'
import { promisify } from 'node:util'
import { secp256k1 } from '@noble/curves/secp256k1'
import {
  bytesToHex,
  type Hex,
  hashTypedData,
  hexToBytes,
  isAddress,
  isHex,
  keccak256,
  parseTransaction,
  sha256,
  type TransactionSerializable,
  type TypedDataDefinition,
  toHex,
} from 'viem'
import { english, generateMnemonic, HDKey, publicKeyToAddress, signTransaction as signSerializable } from 'viem/accounts'
import { hashAuthorization } from 'viem/utils'
import { GrpcCode, invalid, KmsError } from './errors.js'

/** BIP-32's hardened index offset (an index written with '). */
const HARDENED_OFFSET = 0x80000000

/** The account parameters of create_wallet and create_wallet_accounts. */
export type AccountParams = { curve: string; pathFormat: string; path: string; addressFormat: string }

/**
 * An account derived from a wallet's mnemonic, with its private key: the caller seals that key
 * for the account row and then zeroes it.
 */
export type DerivedAccount = AccountParams & { address: string; publicKey: string; privateKey: Uint8Array }

/** A new BIP-39 mnemonic of 12, 15, 18, 21 or 24 words. */
export function newMnemonic(words = 12): string {
  const strength = { 12: 128, 15: 160, 18: 192, 21: 224, 24: 256 }[words]
  if (!strength) throw invalid(`mnemonicLength must be 12, 15, 18, 21 or 24, got ${words}`)
  return generateMnemonic(english, strength)
}

const ADDRESS_FORMATS = new Set(['ADDRESS_FORMAT_ETHEREUM', 'ADDRESS_FORMAT_COMPRESSED', 'ADDRESS_FORMAT_UNCOMPRESSED'])

function checkAccountParams(params: AccountParams) {
  if (params.curve !== 'CURVE_SECP256K1') throw invalid(`unsupported curve ${params.curve}: this service signs with CURVE_SECP256K1`)
  if (params.pathFormat !== 'PATH_FORMAT_BIP32') throw invalid(`unsupported path format ${params.pathFormat}`)
  if (!/^m(\/\d+'?)+$/.test(params.path)) throw invalid(`invalid BIP-32 path ${params.path}`)
  if (!ADDRESS_FORMATS.has(params.addressFormat)) throw invalid(`unsupported address format ${params.addressFormat}`)
}

const pbkdf2Async = promisify(pbkdf2)

/**
 * BIP-39's seed (PBKDF2-HMAC-SHA512, 2048 rounds, salt "mnemonic", both NFKD), by node:crypto on
 * libuv's thread pool: the one costly step of a wallet's creation never runs on the event loop.
 */
const seedOf = async (mnemonic: string) => new Uint8Array(await pbkdf2Async(mnemonic.normalize('NFKD'), 'mnemonic', 2048, 64, 'sha512'))

// Requests that derive several accounts take turns, one request at a time: each yields after every
// account, so whatever else the kms does (another user's signature) waits behind one account at
// most, however many such requests are in flight (a flood of create_wallet: security review M4).
let derivationLane: Promise<void> = Promise.resolve()

async function inDerivationLane<result>(work: () => Promise<result>): Promise<result> {
  const before = derivationLane
  let release!: () => void
  derivationLane = new Promise((resolve) => {
    release = resolve
  })
  await before
  try {
    return await work()
  } finally {
    release()
  }
}

/**
 * Derives accounts: secp256k1 keys on BIP-32 paths of the mnemonic's BIP-39 seed, with an Ethereum
 * address (or the public key itself, for the compressed and uncompressed address formats). Every
 * parameter is checked first. The seed is computed off the event loop (`seedOf`); each account's
 * parent node is derived once for all its siblings; the event loop is yielded after every
 * account, and requests of several accounts take turns (`inDerivationLane`), so a request of 100
 * accounts never holds the loop for longer than one account takes, nor do eight of them at once
 * (security review M4). A single account (a signature's key derived on first use) does not queue.
 * The seed and nodes are wiped after.
 *
 * @example
 * const [account] = await deriveAccounts(mnemonic, [{ curve: 'CURVE_SECP256K1', pathFormat: 'PATH_FORMAT_BIP32', path: "m/44'/60'/0'/0/0", addressFormat: 'ADDRESS_FORMAT_ETHEREUM' }])
 */
export async function deriveAccounts(mnemonic: string, accounts: readonly AccountParams[]): Promise<DerivedAccount[]> {
  for (const params of accounts) checkAccountParams(params)
  if (!accounts.length) return []
  return accounts.length === 1 ? derive(mnemonic, accounts) : inDerivationLane(() => derive(mnemonic, accounts))
}

async function derive(mnemonic: string, accounts: readonly AccountParams[]): Promise<DerivedAccount[]> {
  const seed = await seedOf(mnemonic)
  const root = HDKey.fromMasterSeed(seed)
  const parents = new Map<string, HDKey>([['m', root]])
  const derived: DerivedAccount[] = []
  try {
    for (const params of accounts) {
      const cut = params.path.lastIndexOf('/')
      const parentPath = params.path.slice(0, cut)
      let parent = parents.get(parentPath)
      if (!parent) {
        parent = root.derive(parentPath)
        parents.set(parentPath, parent)
      }
      const last = params.path.slice(cut + 1)
      const node = parent.deriveChild(Number.parseInt(last, 10) + (last.endsWith("'") ? HARDENED_OFFSET : 0))
      if (!node.privateKey || !node.publicKey) throw new KmsError(GrpcCode.internal, `no private key at ${params.path}`)
      const privateKey = Uint8Array.from(node.privateKey)
      const compressed = bytesToHex(node.publicKey).slice(2)
      node.wipePrivateData()
      const uncompressed = bytesToHex(secp256k1.ProjectivePoint.fromHex(compressed).toRawBytes(false))
      const address = {
        ADDRESS_FORMAT_ETHEREUM: publicKeyToAddress(uncompressed),
        ADDRESS_FORMAT_COMPRESSED: compressed,
        ADDRESS_FORMAT_UNCOMPRESSED: uncompressed.slice(2),
      }[params.addressFormat]!
      derived.push({ ...params, address, publicKey: compressed, privateKey })
      await nextTurn()
    }
    return derived
  } catch (error) {
    for (const account of derived) account.privateKey.fill(0)
    throw error
  } finally {
    for (const node of parents.values()) node.wipePrivateData()
    seed.fill(0)
  }
}

/** An EIP-712 payload (`serializeTypedData`'s JSON): undefined unless it hashes as typed data. */
export function typedDataOf(payload: string): TypedDataDefinition | undefined {
  try {
    const typed = JSON.parse(payload) as TypedDataDefinition
    hashTypedData(typed)
    return typed
  } catch {
    return undefined
  }
}

/** An EIP-7702 authorization payload, `{"address","chainId","nonce"}` as @turnkey/viem's signAuthorization sends it. */
export type AuthorizationPayload = { address: `0x${string}`; chainId: number; nonce: number }

/** An EIP-7702 authorization payload: undefined unless it has a contract address, a chain id and a nonce. */
export function authorizationOf(payload: string): AuthorizationPayload | undefined {
  let parsed: unknown
  try {
    parsed = JSON.parse(payload)
  } catch {
    return undefined
  }
  if (typeof parsed !== 'object' || parsed === null) return undefined
  const { address, contractAddress, chainId, nonce } = parsed as Record<string, unknown>
  const contract = address ?? contractAddress
  const count = (value: unknown) => typeof value === 'number' && Number.isSafeInteger(value) && value >= 0
  if (typeof contract !== 'string' || !isAddress(contract, { strict: false }) || !count(chainId) || !count(nonce)) return undefined
  return { address: contract, chainId: chainId as number, nonce: nonce as number }
}

/** The 32 bytes to sign for a sign_raw_payload request. */
export function digestOf(payload: string, encoding: string, hashFunction: string): Hex {
  if (encoding === 'PAYLOAD_ENCODING_EIP712') {
    try {
      return hashTypedData(JSON.parse(payload))
    } catch (error) {
      throw invalid(`payload is not EIP-712 typed data: ${(error as Error).message}`)
    }
  }
  if (encoding === 'PAYLOAD_ENCODING_EIP7702_AUTHORIZATION') {
    const authorization = authorizationOf(payload)
    if (!authorization)
      throw invalid('payload is not an EIP-7702 authorization: {"address","chainId","nonce"}, a contract address and two non-negative integers')
    return hashAuthorization(authorization)
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

/**
 * A signature is one multiplication of the base point, from a table noble builds on first use.
 * 10-bit windows instead of its default 8 make signing about a tenth faster, for some 60 ms once
 * (in the first signature) and about a megabyte. The table belongs to the one noble instance the
 * process shares (viem's too); `bench:kms` measures its raw rate with it.
 */
let baseTableReady = false
function precomputeBaseTable() {
  if (baseTableReady) return
  secp256k1.utils.precompute(10)
  baseTableReady = true
}

/**
 * Signs a 32-byte digest: r, s (64 hex digits each, s low as Ethereum requires) and v ("00" or
 * "01", the y parity), without 0x: what the clients read. Deterministic (RFC 6979).
 *
 * @example
 * const { r, s, v } = signDigest(privateKey, digestOf(payload, 'PAYLOAD_ENCODING_HEXADECIMAL', 'HASH_FUNCTION_NO_OP'))
 */
export function signDigest(privateKey: Uint8Array, digest: Hex): { r: string; s: string; v: string } {
  precomputeBaseTable()
  const { r, s, recovery } = secp256k1.sign(hexToBytes(digest), privateKey, { lowS: true })
  return { r: r.toString(16).padStart(64, '0'), s: s.toString(16).padStart(64, '0'), v: recovery & 1 ? '01' : '00' }
}

/** Signs an unsigned serialized Ethereum transaction (legacy, EIP-2930, EIP-1559, EIP-7702); hex without 0x. */
export async function signTransaction(privateKey: Uint8Array, unsignedTransaction: string): Promise<string> {
  const hex = (unsignedTransaction.startsWith('0x') ? unsignedTransaction : `0x${unsignedTransaction}`) as Hex
  let transaction: TransactionSerializable
  try {
    transaction = parseTransaction(hex) as TransactionSerializable
  } catch (error) {
    throw invalid(`unsignedTransaction is not a serialized Ethereum transaction: ${(error as Error).message.split('\n')[0]}`)
  }
  precomputeBaseTable()
  const signed = await signSerializable({ privateKey: bytesToHex(privateKey), transaction })
  return signed.slice(2)
}
