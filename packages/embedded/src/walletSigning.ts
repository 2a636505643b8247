import type { Address, Hex, SignableMessage, TransactionSerializable, TypedDataDefinition } from 'viem'
import { concatHex, getTypesForEIP712Domain, pad, serializeTypedData, stringToHex, toHex, toPrefixedMessage } from 'viem'
import type { ConsentWalletRequest } from './consentFrame.js'
import { MissingBaseUrlError, MissingSignWithError, SignRawPayloadResultNotFoundError } from './errors.js'
import { kmsCall, rpcJson } from './kmsCalls.js'
import { postStamped } from './kmsClient.js'
import type { KmsGrant } from './permissions.js'
import type { WalletContext } from './walletContext.js'
import type { TransactionRequest } from './walletTypes.js'

/**
 * Signing through the kms: messages, typed data, EIP-7702 authorizations and transactions, each
 * approved by the user in the consent frame, or signed inside a grant the user approved there.
 */
export function signingOf(context: WalletContext) {
  const { now, signer, signedIn, chainOf, submit, submitStamped, settings, withSession } = context

  /**
   * sign_raw_payload V2 in an encoding the kms reads (CONTRACT25: the EIP-191 preimage, EIP-712
   * JSON, an EIP-7702 authorization), approved as `consent`: r ‖ s ‖ v.
   */
  async function signRaw(
    consent: ConsentWalletRequest,
    parameters: { payload: string; encoding: string; hashFunction: string },
    signWith: string | undefined,
  ): Promise<Hex> {
    if (!signWith) throw new MissingSignWithError()
    const { organizationId } = signedIn()
    const result = await submit<{ r?: string; s?: string; v?: string }>('signRawPayloadResult', consent, (kms) =>
      kms.signRawPayload({
        type: 'ACTIVITY_TYPE_SIGN_RAW_PAYLOAD_V2',
        timestampMs: String(now()),
        organizationId,
        parameters: { signWith, ...parameters } as never,
      }),
    )
    const signature = result
    if (!signature?.r || !signature.s || signature.v === undefined) throw new SignRawPayloadResultNotFoundError()
    // r ‖ s ‖ v with v = 27 + yParity, as viem's serializeSignature writes it (without the curve
    // arithmetic it loads to normalise r and s, which the kms already sends as 32-byte values).
    const v = Number.parseInt(signature.v, 16) % 27 ? '0x1c' : '0x1b'
    return concatHex([pad(`0x${signature.r}`, { size: 32 }), pad(`0x${signature.s}`, { size: 32 }), v])
  }

  /** EIP-191: the kms hashes the preimage itself, so it (and its policies) read the message. */
  function signMessage(message: SignableMessage, signWith: string | undefined): Promise<Hex> {
    const data = typeof message === 'string' ? stringToHex(message) : typeof message.raw === 'string' ? message.raw : toHex(message.raw)
    return signRaw(
      { method: 'personal_sign', params: [data, signWith] },
      { payload: toPrefixedMessage(message).slice(2), encoding: 'PAYLOAD_ENCODING_HEXADECIMAL', hashFunction: 'HASH_FUNCTION_KECCAK256' },
      signWith,
    )
  }

  /** EIP-712: the kms computes the hash from the typed data. */
  function signTypedData(typedData: TypedDataDefinition, signWith: string | undefined): Promise<Hex> {
    // serializeTypedData keeps only the domain fields its EIP712Domain type names: name them all.
    const types = { EIP712Domain: getTypesForEIP712Domain({ domain: typedData.domain }), ...typedData.types }
    const serialized = serializeTypedData({ ...typedData, types } as never)
    return signRaw(
      { method: 'eth_signTypedData_v4', params: [signWith, serialized] },
      { payload: serialized, encoding: 'PAYLOAD_ENCODING_EIP712', hashFunction: 'HASH_FUNCTION_NOT_APPLICABLE' },
      signWith,
    )
  }

  /** EIP-7702: the kms hashes the authorization itself (and its policy sees the contract). */
  function signAuthorizationTuple(authorization: { address: Address; chainId: number; nonce: number }, signWith: string): Promise<Hex> {
    return signRaw(
      { method: 'eip7702_authorization', params: [authorization] },
      { payload: JSON.stringify(authorization), encoding: 'PAYLOAD_ENCODING_EIP7702_AUTHORIZATION', hashFunction: 'HASH_FUNCTION_NOT_APPLICABLE' },
      signWith,
    )
  }

  /** sign_transaction V2 of `transaction`, approved as `consent` (default: the transaction as eth_sendTransaction). */
  async function signTransaction(transaction: TransactionSerializable, signWith: string | undefined, consent?: ConsentWalletRequest): Promise<Hex> {
    if (!signWith) throw new MissingSignWithError()
    const { organizationId } = signedIn()
    const { serializeTransaction } = await import('./transactions.js')
    const grant = await grantCovering(transaction, signWith as Address)
    if (grant) return signInGrant(grant.grantId, serializeTransaction(transaction).slice(2), signWith)
    const request = consent ?? { method: 'eth_sendTransaction', params: [rpcJson({ from: signWith, ...transaction })] }
    const result = await submit<{ signedTransaction?: string }>('signTransactionResult', request, (kms) =>
      kms.signTransaction({
        type: 'ACTIVITY_TYPE_SIGN_TRANSACTION_V2',
        timestampMs: String(now()),
        organizationId,
        parameters: { signWith, unsignedTransaction: serializeTransaction(transaction).slice(2), type: 'TRANSACTION_TYPE_ETHEREUM' },
      }),
    )
    const signed = result?.signedTransaction
    if (!signed) throw new SignRawPayloadResultNotFoundError({ details: 'sign_transaction returned no signed transaction' })
    return (signed.startsWith('0x') ? signed : `0x${signed}`) as Hex
  }

  /** The user's grants in force (list_grants, a Latchkey query), stamped as any query, with no prompt. */
  async function listGrants(): Promise<KmsGrant[]> {
    const { organizationId, userId } = signedIn()
    const body = JSON.stringify({ organizationId, userId })
    const { kmsUrl } = await settings()
    if (!kmsUrl) throw new MissingBaseUrlError()
    const answer = await withSession(async () =>
      kmsCall(async () => postStamped({ baseUrl: kmsUrl }, 'query/list_grants', body, await signer.query.stamp(body))),
    )
    return (answer as { grants: KmsGrant[] }).grants
  }

  /** The grant in force whose scope covers `transaction` (grants.ts), when the signer keeps grant keys. */
  async function grantCovering(transaction: TransactionSerializable, account: Address): Promise<KmsGrant | undefined> {
    if (!signer.grants) return undefined
    const [{ coveringGrant }, grants] = await Promise.all([import('./grants.js'), listGrants()])
    return coveringGrant(grants, transaction, account, now())
  }

  /**
   * sign_transaction stamped with the grant's key in the consent frame, with no prompt: the kms
   * applies the grant's rule. A refusal is GrantRefusedError, never a prompt instead.
   */
  async function signInGrant(grantId: string, unsignedTransaction: string, signWith: string): Promise<Hex> {
    const { organizationId } = signedIn()
    const body = JSON.stringify({
      type: 'ACTIVITY_TYPE_SIGN_TRANSACTION_V2',
      timestampMs: String(now()),
      organizationId,
      parameters: { signWith, unsignedTransaction, type: 'TRANSACTION_TYPE_ETHEREUM' },
    })
    const { asGrantRefusal } = await import('./grants.js')
    let result: Record<string, unknown>
    try {
      result = await submitStamped('submit/sign_transaction', body, await signer.grants!.stamper(grantId).stamp(body))
    } catch (error) {
      throw asGrantRefusal(error, grantId)
    }
    const signed = (result['signTransactionResult'] as { signedTransaction?: string } | undefined)?.signedTransaction
    if (!signed) throw new SignRawPayloadResultNotFoundError({ details: 'sign_transaction returned no signed transaction' })
    return (signed.startsWith('0x') ? signed : `0x${signed}`) as Hex
  }

  /**
   * Fills nonce, gas and fees from the chain, signs through the kms and broadcasts; answers the
   * hash. `consent` is the request the user approves (default: this transaction as eth_sendTransaction).
   */
  async function sendTransaction(request: TransactionRequest, consent?: ConsentWalletRequest): Promise<Hex> {
    const { credential, chainId } = signedIn()
    const chain = chainOf(chainId)
    const { createClient, http, prepareTransactionRequest } = await import('./transactions.js')
    // A bare client with the one action it needs: not every public action in the lazy chunk.
    const publicClient = createClient({ chain, transport: http(chain.rpcUrls.default.http[0]) })
    const prepared = await prepareTransactionRequest(publicClient, { ...request, account: credential.address, chain } as Parameters<
      typeof prepareTransactionRequest
    >[1])
    const { account: _account, from: _from, parameters: _parameters, chainId: _chainId, ...fields } = prepared as Record<string, unknown>
    const transaction = { ...(fields as TransactionSerializable), chainId: chain.id }
    const signed = await signTransaction(transaction, credential.address, consent)
    return publicClient.request({ method: 'eth_sendRawTransaction', params: [signed] })
  }

  return { signRaw, signMessage, signTypedData, signAuthorizationTuple, signTransaction, sendTransaction, listGrants }
}

/** The wallet's signing functions. */
export type WalletSigning = ReturnType<typeof signingOf>
