import { type Address, concatHex, encodeAbiParameters, getContractAddress, type Hex, pad } from 'viem'
import artifact from './BatchExecutor.json' with { type: 'json' }
import type { Artifact } from './build.js'
import sponsorArtifact from './SponsorPaymaster.json' with { type: 'json' }
import tokenArtifact from './TestToken.json' with { type: 'json' }
import tokenPaymasterJson from './TokenPaymaster.json' with { type: 'json' }

/** The checked-in artifact of BatchExecutor.sol (ABI, creation and runtime bytecode, compiler). */
export const batchExecutorArtifact = artifact as Artifact<'BatchExecutor'>

/**
 * The deterministic deployment proxy (CREATE2 factory) that anvil predeploys and most public
 * chains carry at the same address: calldata `salt ‖ initcode` deploys `initcode` with CREATE2.
 */
export const CREATE2_FACTORY: Address = '0x4e59b44847b379578588920ca78fbf26c0b4956c'

/** Salt of the executor's CREATE2 deployment: zero, so anyone can reproduce the address. */
export const BATCH_EXECUTOR_SALT: Hex = pad('0x00', { size: 32 })

/** Where the executor lives on every chain with the factory: a function of its bytecode only. */
export const batchExecutorAddress: Address = getContractAddress({
  opcode: 'CREATE2',
  from: CREATE2_FACTORY,
  salt: BATCH_EXECUTOR_SALT,
  bytecode: batchExecutorArtifact.bytecode,
})

/** The calldata that deploys the executor through the factory. */
export const batchExecutorDeployData: Hex = concatHex([BATCH_EXECUTOR_SALT, batchExecutorArtifact.bytecode])

/** The checked-in artifact of TestToken.sol, the demo's ERC-20 ("Test Token", TKN, 18 decimals, open mint). */
export const testTokenArtifact = tokenArtifact as Artifact<'TestToken'>

/** Salt of the test token's CREATE2 deployment: zero, like the executor's. */
export const TEST_TOKEN_SALT: Hex = pad('0x00', { size: 32 })

/** Where the test token lives on every chain with the factory: a function of its bytecode only. */
export const testTokenAddress: Address = getContractAddress({
  opcode: 'CREATE2',
  from: CREATE2_FACTORY,
  salt: TEST_TOKEN_SALT,
  bytecode: testTokenArtifact.bytecode,
})

/** The calldata that deploys the test token through the factory. */
export const testTokenDeployData: Hex = concatHex([TEST_TOKEN_SALT, testTokenArtifact.bytecode])

/** The checked-in artifact of SponsorPaymaster.sol: gas paid by the paymaster's deposit when the service's key signed. */
export const sponsorPaymasterArtifact = sponsorArtifact as Artifact<'SponsorPaymaster'>

/** The checked-in artifact of TokenPaymaster.sol: gas paid in an ERC-20 at a price the service's key signed. */
export const tokenPaymasterArtifact = tokenPaymasterJson as Artifact<'TokenPaymaster'>

/** Salt of the paymasters' CREATE2 deployments: zero; their addresses depend on the constructor's signer and owner. */
export const PAYMASTER_SALT: Hex = pad('0x00', { size: 32 })

/** A paymaster's constructor arguments: the service key that signs sponsorships, and the owner of its funds. */
export type PaymasterConstructor = { signer: Address; owner: Address }

const paymasterInitCode = (bytecode: Hex, { signer, owner }: PaymasterConstructor) =>
  concatHex([bytecode, encodeAbiParameters([{ type: 'address' }, { type: 'address' }], [signer, owner])])

const paymasterDeployment = (bytecode: Hex, keys: PaymasterConstructor) => {
  const initCode = paymasterInitCode(bytecode, keys)
  return {
    address: getContractAddress({ opcode: 'CREATE2', from: CREATE2_FACTORY, salt: PAYMASTER_SALT, bytecode: initCode }),
    deployData: concatHex([PAYMASTER_SALT, initCode]),
  }
}

/**
 * Where the sponsor paymaster for `signer` and `owner` lands through the CREATE2 factory (the same
 * on every chain with it), and the factory calldata that deploys it there.
 *
 * @example
 * const { address, deployData } = sponsorPaymasterDeployment({ signer: service.address, owner: operator.address })
 */
export const sponsorPaymasterDeployment = (keys: PaymasterConstructor): { address: Address; deployData: Hex } =>
  paymasterDeployment(sponsorPaymasterArtifact.bytecode, keys)

/**
 * Where the token paymaster for `signer` and `owner` lands through the CREATE2 factory, and the
 * factory calldata that deploys it there.
 *
 * @example
 * const { address, deployData } = tokenPaymasterDeployment({ signer: service.address, owner: operator.address })
 */
export const tokenPaymasterDeployment = (keys: PaymasterConstructor): { address: Address; deployData: Hex } =>
  paymasterDeployment(tokenPaymasterArtifact.bytecode, keys)
