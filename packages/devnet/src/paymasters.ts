import { randomBytes } from 'node:crypto'
import { link, readFile, unlink, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import {
  type Address,
  createPublicClient,
  createWalletClient,
  encodeFunctionData,
  type Hex,
  http,
  keccak256,
  maxUint256,
  parseAbi,
  parseEther,
  toHex,
} from 'viem'
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'
import { sponsorPaymasterArtifact, sponsorPaymasterDeployment, tokenPaymasterArtifact, tokenPaymasterDeployment } from '../../../contracts/index.js'
import { deployWithCreate2 } from './create2.js'
import { ENTRY_POINT_ADDRESS } from './entryPoint.js'
import { DevnetError } from './instance.js'
import { TEST_TOKEN_ADDRESS } from './token.js'

// The two paymasters of sponsored gas (contracts/SponsorPaymaster.sol, contracts/TokenPaymaster.sol)
// on the local chains: their signer and owner keys and the guarantor's key live in the state
// directory, so their CREATE2 addresses survive restarts; every start deploys them on the fresh
// chains, fills their EntryPoint deposits and readies the guarantor.

/** What a backend needs to run the paymaster service against the local chains. */
export type StackPaymasters = {
  /** The key that signs sponsorships and token quotes (both paymasters' `signer()`). */
  readonly signer: { readonly privateKey: Hex; readonly address: Address }
  /** Holds TKN and approved the token paymaster: it prefunds an account's first operation in TKN. */
  readonly guarantor: { readonly privateKey: Hex; readonly address: Address }
  /** The owner of both paymasters (withdraws, stakes, rotates the signer). */
  readonly owner: { readonly privateKey: Hex; readonly address: Address }
  /** contracts/SponsorPaymaster.sol: the same CREATE2 address on both chains. */
  readonly sponsorPaymaster: Address
  /** contracts/TokenPaymaster.sol: the same CREATE2 address on both chains. */
  readonly tokenPaymaster: Address
}

/** What `paymasters.json` keeps (mode 0600). */
type PaymasterState = { signerPrivateKey: Hex; ownerPrivateKey: Hex; guarantorPrivateKey: Hex }

/** Each paymaster's EntryPoint deposit after a start. */
export const PAYMASTER_DEPOSIT = parseEther('100')
/** The guarantor's TKN after a start. */
export const GUARANTOR_TOKENS = parseEther('1000000')

// A throwaway key that anvil funds: it pays the paymasters' deposits, so anvil's test accounts keep
// their nonces and balances (as the bundlers' keys do).
const FUNDER_KEY: Hex = keccak256(toHex('latchkey devnet paymaster funder'))
const ABI = parseAbi([
  'function deposit() payable',
  'function balanceOf(address) view returns (uint256)',
  'function mint(address to, uint256 amount)',
  'function approve(address spender, uint256 amount) returns (bool)',
])

/**
 * The paymasters' keys from `<stateDir>/paymasters.json`, created (mode 0600) on the first start,
 * and the addresses they give the paymasters.
 *
 * @example
 * const paymasters = await loadPaymasters('.latchkey')
 */
export async function loadPaymasters(stateDir: string): Promise<StackPaymasters> {
  const path = join(stateDir, 'paymasters.json')
  let state = await readFile(path, 'utf8').then(
    (text) => JSON.parse(text) as PaymasterState,
    (error: NodeJS.ErrnoException) => {
      if (error.code === 'ENOENT') return undefined
      throw error
    },
  )
  if (!state) {
    const fresh: PaymasterState = { signerPrivateKey: generatePrivateKey(), ownerPrivateKey: generatePrivateKey(), guarantorPrivateKey: generatePrivateKey() }
    const temporary = `${path}.${process.pid}.${randomBytes(6).toString('hex')}.tmp`
    await writeFile(temporary, `${JSON.stringify(fresh, null, 2)}\n`, { mode: 0o600 })
    // link, not rename: of two stacks starting on one new state directory, the first file wins and
    // the other reads it, so both use the same keys (readers never see a half-written file either).
    try {
      await link(temporary, path)
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error
    } finally {
      await unlink(temporary)
    }
    state = JSON.parse(await readFile(path, 'utf8')) as PaymasterState
  }
  const key = (privateKey: Hex) => ({ privateKey, address: privateKeyToAccount(privateKey).address })
  const signer = key(state.signerPrivateKey)
  const owner = key(state.ownerPrivateKey)
  const keys = { signer: signer.address, owner: owner.address }
  return {
    signer,
    owner,
    guarantor: key(state.guarantorPrivateKey),
    sponsorPaymaster: sponsorPaymasterDeployment(keys).address,
    tokenPaymaster: tokenPaymasterDeployment(keys).address,
  }
}

/**
 * Deploys both paymasters on the anvil chain at `rpcUrl` (after the EntryPoint and the test token;
 * CREATE2 through the deterministic deployment proxy, with the shared deployer, so not alongside
 * other deployments on that chain), tops each one's EntryPoint deposit up to
 * {@link PAYMASTER_DEPOSIT}, and gives the guarantor ETH for its own transactions,
 * {@link GUARANTOR_TOKENS} TKN and an unlimited approval of the token paymaster.
 *
 * @example
 * await deployPaymasters(chainA.url, await loadPaymasters(stateDir))
 */
export async function deployPaymasters(rpcUrl: string, paymasters: StackPaymasters): Promise<void> {
  const keys = { signer: paymasters.signer.address, owner: paymasters.owner.address }
  // Their EIP-712 immutables (chain id, own address) complete the runtime code, so compare lengths.
  for (const [name, artifact, deployment] of [
    ['the sponsor paymaster', sponsorPaymasterArtifact, sponsorPaymasterDeployment(keys)],
    ['the token paymaster', tokenPaymasterArtifact, tokenPaymasterDeployment(keys)],
  ] as const)
    await deployWithCreate2({ rpcUrl, name, ...deployment, isDeployed: (code) => code.length === artifact.deployedBytecode.length })

  const transport = http(rpcUrl)
  const chain = createPublicClient({ transport })
  const chainId = await chain.getChainId()
  const send = async (privateKey: Hex, request: { to: Address; data?: Hex; value?: bigint }, what: string) => {
    const wallet = createWalletClient({ account: privateKeyToAccount(privateKey), transport, chain: { id: chainId } as never })
    const receipt = await chain.waitForTransactionReceipt({ hash: await wallet.sendTransaction({ ...request, chain: null }), pollingInterval: 50 })
    if (receipt.status !== 'success') throw new DevnetError(`${what} on ${rpcUrl} failed`, { code: 'PAYMASTER_SETUP_FAILED' })
  }
  const funder = privateKeyToAccount(FUNDER_KEY).address
  const guarantor = paymasters.guarantor.address
  await chain.request({ method: 'anvil_setBalance', params: [funder, toHex(PAYMASTER_DEPOSIT * 3n)] } as never)
  await chain.request({ method: 'anvil_setBalance', params: [guarantor, toHex(parseEther('1'))] } as never)
  const fund = async () => {
    for (const paymaster of [paymasters.sponsorPaymaster, paymasters.tokenPaymaster]) {
      const deposit = await chain.readContract({ address: ENTRY_POINT_ADDRESS, abi: ABI, functionName: 'balanceOf', args: [paymaster] })
      if (deposit < PAYMASTER_DEPOSIT)
        await send(FUNDER_KEY, { to: paymaster, data: encode('deposit', []), value: PAYMASTER_DEPOSIT - deposit }, 'the paymaster deposit')
    }
  }
  const readyGuarantor = async () => {
    const tokens = await chain.readContract({ address: TEST_TOKEN_ADDRESS, abi: ABI, functionName: 'balanceOf', args: [guarantor] })
    if (tokens < GUARANTOR_TOKENS)
      await send(
        paymasters.guarantor.privateKey,
        { to: TEST_TOKEN_ADDRESS, data: encode('mint', [guarantor, GUARANTOR_TOKENS - tokens]) },
        'the guarantor mint',
      )
    await send(
      paymasters.guarantor.privateKey,
      { to: TEST_TOKEN_ADDRESS, data: encode('approve', [paymasters.tokenPaymaster, maxUint256]) },
      'the guarantor approval',
    )
  }
  await Promise.all([fund(), readyGuarantor()])
}

const encode = <name extends 'deposit' | 'mint' | 'approve'>(functionName: name, args: readonly unknown[]): Hex =>
  encodeFunctionData({ abi: ABI, functionName, args } as never)
