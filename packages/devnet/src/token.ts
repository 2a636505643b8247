import { testTokenAddress, testTokenArtifact, testTokenDeployData } from '../../../contracts/index.js'
import { deployWithCreate2 } from './create2.js'

/** The demo's test token ("Test Token", TKN, 18 decimals) on the local chains: the same address on both. */
export const TEST_TOKEN_ADDRESS = testTokenAddress

/**
 * Deploys contracts/TestToken.sol on the anvil chain at `rpcUrl` with CREATE2 (salt
 * `TEST_TOKEN_SALT`, zero) through the deterministic deployment proxy, unless it is there already.
 * Its `mint` is open to anyone: a faucet for the dev chains only. Answers the address.
 *
 * @example
 * const token = await deployTestToken('http://127.0.0.1:8545')
 */
export function deployTestToken(rpcUrl: string): Promise<`0x${string}`> {
  return deployWithCreate2({
    rpcUrl,
    name: 'the test token',
    address: testTokenAddress,
    deployData: testTokenDeployData,
    deployedBytecode: testTokenArtifact.deployedBytecode,
  })
}
