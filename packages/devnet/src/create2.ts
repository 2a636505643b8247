import { createPublicClient, createWalletClient, type Hex, http, keccak256, toHex } from 'viem'
import { privateKeyToAccount } from 'viem/accounts'
import { CREATE2_FACTORY } from '../../../contracts/index.js'
import { DevnetError } from './instance.js'

// A throwaway key that pays for the deployments, funded by anvil itself: the test accounts keep
// their nonces and balances. Anyone may send the factory call; the address does not depend on it.
const DEPLOYER_KEY: Hex = keccak256(toHex('latchkey devnet batch executor deployer'))

export type DeployWithCreate2Parameters = {
  readonly rpcUrl: string
  /** Name in error messages: "the batch executor", "the test token". */
  readonly name: string
  /** Where CREATE2 puts it (a function of the salt and the creation bytecode). */
  readonly address: `0x${string}`
  /** `salt ‖ creation bytecode`, the factory's calldata. */
  readonly deployData: Hex
} & (
  | {
      /** The runtime bytecode that must be at `address` afterwards. */
      readonly deployedBytecode: Hex
    }
  | {
      /**
       * Whether the code at `address` is the contract's, for one with immutables, whose runtime code
       * the constructor completes (only this creation code can have put code at a CREATE2 address).
       */
      readonly isDeployed: (code: Hex) => boolean
    }
)

/**
 * Deploys a checked-in contract on the anvil chain at `rpcUrl` through the deterministic deployment
 * proxy, unless its code is there already; checks that the code at the address is the expected
 * runtime bytecode. Answers the address. Calls on one chain must not overlap (one deployer nonce).
 *
 * @example
 * await deployWithCreate2({ rpcUrl, name: 'the test token', address, deployData, deployedBytecode })
 */
export async function deployWithCreate2(parameters: DeployWithCreate2Parameters): Promise<`0x${string}`> {
  const { rpcUrl, name, address, deployData } = parameters
  const isDeployed = 'isDeployed' in parameters ? parameters.isDeployed : (code: Hex) => code === parameters.deployedBytecode
  const transport = http(rpcUrl)
  const chain = createPublicClient({ transport })
  const deployed = async () => isDeployed((await chain.getCode({ address })) ?? '0x')
  if (await deployed()) return address
  const factory = await chain.getCode({ address: CREATE2_FACTORY })
  if (!factory || factory === '0x')
    throw new DevnetError(`no CREATE2 factory at ${CREATE2_FACTORY} on ${rpcUrl}: start anvil without --disable-default-create2-deployer`, {
      code: 'NO_CREATE2_FACTORY',
    })
  const account = privateKeyToAccount(DEPLOYER_KEY)
  await chain.request({ method: 'anvil_setBalance', params: [account.address, '0xde0b6b3a7640000'] } as never)
  const wallet = createWalletClient({ account, transport, chain: { id: await chain.getChainId() } as never })
  const hash = await wallet.sendTransaction({ to: CREATE2_FACTORY, data: deployData, chain: null })
  const receipt = await chain.waitForTransactionReceipt({ hash, pollingInterval: 50 })
  if (receipt.status !== 'success' || !(await deployed()))
    throw new DevnetError(`${name} deployment on ${rpcUrl} did not leave the expected code at ${address}`, { code: 'DEPLOY_FAILED' })
  return address
}
