import type { Address, Hex, SignedAuthorization, TypedDataDefinition } from 'viem'
import { toHex } from 'viem'
import { callsWatcher } from './callsWatch.js'
import type { ConsentWalletRequest } from './consentFrame.js'
import { CannotProceedError, EmbeddedError } from './errors.js'
import { rpcJson } from './kmsCalls.js'
import type { AtomicStatus, BatchCall, PaymasterService, SmartAccountContext } from './smartAccount.js'
import type { UserOperationContext } from './userOperations.js'
import type { WalletContext } from './walletContext.js'
import type { WalletSigning } from './walletSigning.js'
import type { TransactionRequest } from './walletTypes.js'

/**
 * Smart accounts and batches: EIP-5792 calls and their status, EIP-7702 upgrades, and ERC-4337
 * UserOperations when sponsorship is on. The smart-account and UserOperation modules load on first use.
 */
export function callsOf(host: WalletContext, signing: WalletSigning) {
  const { options, signedIn, chainOf, batchExecutor } = host
  const { signAuthorizationTuple, signTypedData, sendTransaction } = signing

  /**
   * The smart-account module (loaded once) and what it needs of this wallet, for `chainId` (default
   * the current chain). `consent`: what the user approves for the transactions it sends (e.g. the
   * wallet_sendCalls request); default each transaction itself.
   */
  async function smartAccount(chainId?: number, consent?: ConsentWalletRequest) {
    const { credential, chainId: current } = signedIn()
    const module = await import('./smartAccount.js')
    const context: SmartAccountContext = {
      account: credential.address,
      chain: chainOf(chainId ?? current),
      executor: batchExecutor ?? undefined,
      signAuthorization: (authorization) => signAuthorizationTuple(authorization, credential.address),
      send: ({ authorizationList, ...request }) => sendTransaction(authorizationList ? { ...request, authorizationList, type: 'eip7702' } : request, consent),
    }
    return { module, context }
  }

  /** A batch's status as the chain (or, for a UserOperation, its bundler) reports it now. */
  async function callsStatusNow(id: string) {
    const { module } = await smartAccount()
    const batch = module.decodeBatchId(id)
    const chain = batch && options.chains.find((candidate) => candidate.id === batch.chainId)
    if (!batch || !chain) return undefined
    if (!batch.userOperation) return module.callsStatus(chain, id, batch)
    const bundler = module.bundlerUrl(chain, options.sponsorship?.bundlerUrls)
    const { module: operations, context: sponsored } = await userOperations()
    return bundler ? operations.userOperationStatus(sponsored, bundler, chain, id, batch.hashes[0]!) : undefined
  }
  const callsWatch = callsWatcher({ read: callsStatusNow })
  /** Answers a batch's id once the wallet watches it. */
  const watched = (id: Hex) => {
    callsWatch.start(id)
    return { id }
  }

  /**
   * The UserOperation module (loaded on the first sponsored call) and what it needs of this wallet:
   * the smart-account context, typed data signed through the consent path, and the chain's bundler.
   */
  async function userOperations(chainId?: number) {
    const { credential } = signedIn()
    const [{ module: smart, context }, module] = await Promise.all([smartAccount(chainId), import('./userOperations.js')])
    const operations: UserOperationContext = {
      ...context,
      signTypedData: (typedData) => signTypedData(typedData as TypedDataDefinition, credential.address),
      fetch: (input, init) => (options.fetch ?? globalThis.fetch)(input, init),
    }
    return { module, context: operations, bundlerUrl: smart.bundlerUrl(context.chain, options.sponsorship?.bundlerUrls) }
  }

  /** Keeps what the chain says the account delegates to, so the credential shows the smart account. */
  function noteDelegation(address: Address, chainId: number, delegate: Address | undefined) {
    const record = host.current()
    if (!record || record.credential.address !== address) return
    const key = String(chainId)
    if (record.delegations?.[key] === delegate) return
    const { [key]: _old, ...others } = record.delegations ?? {}
    host.write(host.withSmartAccount({ ...record, delegations: delegate ? { ...others, [key]: delegate } : others }))
  }

  return {
    /** Sent as a UserOperation with sponsorship on (answers the hash of the transaction that carried it, once included). */
    async sendTransaction(request: TransactionRequest): Promise<Hex> {
      if (!options.sponsorship) return sendTransaction(request)
      const { module, context, bundlerUrl } = await userOperations()
      const sent = await module.sendSponsored(context, () => [module.callOf(request)], { ...options.sponsorship, bundlerUrl })
      return sent ? module.transactionOf(context, sent.bundlerUrl, sent.hash) : sendTransaction(request)
    },

    /**
     * EIP-5792 capabilities of the signed-in account by chain (hex chain id → `{ atomic: { status } }`):
     * 'supported' once the account delegates to the batch executor on that chain (read from its
     * code, `0xef0100 ‖ executor`), 'ready' while it can be upgraded (no code, executor deployed),
     * else 'unsupported'. Default: every configured chain.
     */
    async getCapabilities(
      chainIds?: readonly number[],
    ): Promise<Record<Hex, { atomic: { status: AtomicStatus }; paymasterService?: { supported: true } | undefined }>> {
      const { credential } = signedIn()
      const wanted = options.chains.filter((chain) => !chainIds || chainIds.includes(chain.id))
      const entries = await Promise.all(
        wanted.map(async (chain) => {
          const { module, context } = await smartAccount(chain.id)
          const status = await module.atomicStatus(context)
          noteDelegation(credential.address, chain.id, status === 'supported' ? context.executor : undefined)
          // ERC-7677: sponsored batches on chains with a bundler (the sponsorship's or the chain's own).
          const sponsored = status !== 'unsupported' && module.bundlerUrl(chain, options.sponsorship?.bundlerUrls) !== undefined
          return [`0x${chain.id.toString(16)}`, { atomic: { status }, ...(sponsored ? { paymasterService: { supported: true as const } } : {}) }] as const
        }),
      )
      return Object.fromEntries(entries)
    },

    /**
     * Signs an EIP-7702 authorization that delegates the account to the batch executor on the
     * current chain, through the kms (sign_raw_payload over its hash). The account sends it
     * itself, so its nonce is the account's next transaction nonce + 1. Another chain, another
     * nonce or another contract is an {@link InvalidAuthorizationError}, and nothing is signed or sent.
     */
    async signAuthorization(
      requested: { address?: Address | undefined; chainId?: number | undefined; nonce?: number | undefined } = {},
    ): Promise<SignedAuthorization> {
      const { module, context } = await smartAccount()
      return (await module.signAuthorization(context, requested)).authorization
    },

    /**
     * Upgrades the account to a smart account on the current chain: one type-4 transaction from
     * the account to itself carrying the signed authorization. Waits for it and reads the
     * delegation back from the chain. Answers the transaction hash and the credential's new
     * smart-account fields.
     */
    async upgradeAccount(
      requested: { chainId?: number | undefined; nonce?: number | undefined } = {},
    ): Promise<{ hash: Hex; smartWalletRefAddress: Address; smartWalletRefId: string }> {
      const { module, context } = await smartAccount()
      const { hash, upgraded } = await module.upgrade(context, requested)
      if (!upgraded) throw new CannotProceedError({ details: `The upgrade transaction ${hash} did not delegate the account to ${context.executor}.` })
      noteDelegation(context.account, context.chain.id, context.executor)
      return { hash, smartWalletRefAddress: context.account, smartWalletRefId: `eip155:${context.chain.id}:${context.executor}` }
    },

    /**
     * EIP-5792 `wallet_sendCalls` on the current chain: one atomic transaction through the batch
     * executor. An account not yet upgraded is upgraded by that same transaction (it carries the
     * authorization), so the first batch is one transaction too. Without an executor on the chain
     * the calls go one by one, or, with `atomicRequired`, fail with 5760 and nothing is sent.
     * Answers the batch id for {@link getCallsStatus}. With sponsorship on, or ERC-7677's
     * `paymasterService` (an optional one falls back to user-paid gas), one sponsored UserOperation.
     */
    async sendCalls(parameters: {
      calls: readonly BatchCall[]
      chainId?: number | undefined
      atomicRequired?: boolean | undefined
      paymasterService?: PaymasterService | undefined
    }): Promise<{ id: Hex }> {
      if (parameters.chainId !== undefined && parameters.chainId !== host.chainId())
        throw new EmbeddedError('chain_mismatch', `The calls are for chain ${parameters.chainId}; the wallet is on chain ${host.chainId()}.`)
      const { paymasterService: service, ...request } = parameters
      const paymaster = service
        ? { paymasterUrl: service.url, context: service.context, fallback: service.optional ? ('user-pays' as const) : options.sponsorship?.fallback }
        : options.sponsorship
      if (paymaster) {
        const { module, context, bundlerUrl } = await userOperations()
        const sent = await module.sendSponsored(context, () => parameters.calls, { ...paymaster, bundlerUrl })
        if (sent) return watched(module.userOperationId(context.chain.id, sent.hash))
      }
      const consent: ConsentWalletRequest = {
        method: 'wallet_sendCalls',
        params: [rpcJson({ ...request, chainId: toHex(host.chainId()), from: signedIn().credential.address })],
      }
      const { module, context } = await smartAccount(undefined, consent)
      const batch = await module.sendBatch(context, parameters.calls, parameters.atomicRequired ?? false)
      return watched(module.encodeBatchId(context.chain.id, batch))
    },

    /**
     * EIP-5792 `wallet_getCallsStatus` of a batch this wallet sent: status code, `atomic`, and the
     * receipts once mined. `undefined` for an id this wallet did not issue. A batch sent from this
     * page is answered from the wallet's own watch of it (callsWatch.ts), without a request.
     */
    async getCallsStatus(id: string) {
      const { module, context } = await smartAccount()
      const batch = module.decodeBatchId(id)
      const chain = batch && options.chains.find((candidate) => candidate.id === batch.chainId)
      if (!batch || !chain) return undefined
      const status = await callsWatch.read(id)
      // A mined batch may have upgraded the account: the credential follows the chain.
      if (!batch.userOperation && status?.status === 200 && batch.atomic && chain.id === context.chain.id && context.executor) {
        const current = await module.atomicStatus(context)
        noteDelegation(context.account, chain.id, current === 'supported' ? context.executor : undefined)
      }
      return status
    },
  }
}
