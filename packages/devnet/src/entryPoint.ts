import { createRequire } from 'node:module'
import { type Address, concatHex, getContractAddress, type Hex } from 'viem'
import { CREATE2_FACTORY } from '../../../contracts/index.js'
import { deployWithCreate2 } from './create2.js'

// EntryPoint v0.8 as eth-infinitism publishes it (`@account-abstraction/contracts` 0.8.0, its latest
// stable release), deployed the way it reached every public chain: through the deterministic
// deployment proxy with the salt of its canonical deployment, so it lands at the canonical address.
const artifact = createRequire(import.meta.url)('@account-abstraction/contracts/artifacts/EntryPoint.json') as { bytecode: Hex; deployedBytecode: Hex }

/** The salt of EntryPoint v0.8's canonical CREATE2 deployment. */
const ENTRY_POINT_SALT: Hex = '0x0a59dbff790c23c976a548690c27297883cc66b4c67024f9117b0238995e35e9'

/**
 * ERC-4337 EntryPoint v0.8 on the local chains: its canonical address, a function of the published
 * bytecode and the canonical salt (viem's `entryPoint08Address`, OpenZeppelin's `ENTRYPOINT_V08`).
 */
export const ENTRY_POINT_ADDRESS: Address = getContractAddress({
  opcode: 'CREATE2',
  from: CREATE2_FACTORY,
  salt: ENTRY_POINT_SALT,
  bytecode: artifact.bytecode,
})

/**
 * Deploys EntryPoint v0.8 on the anvil chain at `rpcUrl` at its canonical address, unless it is
 * there already. Answers the address.
 *
 * @example
 * const entryPoint = await deployEntryPoint('http://127.0.0.1:8545')
 */
export function deployEntryPoint(rpcUrl: string): Promise<Address> {
  return deployWithCreate2({
    rpcUrl,
    name: 'the EntryPoint',
    address: ENTRY_POINT_ADDRESS,
    deployData: concatHex([ENTRY_POINT_SALT, artifact.bytecode]),
    // Its constructor fills in immutables (its SenderCreator, the EIP-712 domain), so the code is the
    // published runtime bytecode's length, not its bytes.
    isDeployed: (code) => code.length === artifact.deployedBytecode.length,
  })
}
