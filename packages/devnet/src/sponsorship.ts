import type { PaymasterPolicyInput } from '@latchkey/server'
import { ENTRY_POINT_ADDRESS } from './entryPoint.js'
import { TEST_TOKEN_ADDRESS } from './token.js'

/**
 * What the local stack's paymaster service sponsors (the operator's policy, as `latchkey-server
 * --paymaster-policy` reads it): on both chains, the test token's functions for this app's users,
 * 0.05 ETH of gas per user and 10 ETH in all per day, at most 3,000,000 gas an operation; gas in TKN
 * at 1,000 TKN per ETH, the stack's guarantor fronting a first operation that approves the token
 * paymaster.
 *
 * @example
 * createAppServer({ …, paymaster: { signerPrivateKey, policy: demoSponsorshipPolicy({ chains, paymasters, guarantor, appName }) } })
 */
export function demoSponsorshipPolicy(parameters: {
  chains: readonly { id: number; rpcUrl: string }[]
  paymasters: { sponsor: `0x${string}`; token: `0x${string}` }
  guarantor: `0x${string}`
  appName: string
}): PaymasterPolicyInput {
  return {
    sponsorName: parameters.appName,
    accounts: 'users',
    chains: parameters.chains.map((chain) => ({
      chainId: chain.id,
      rpcUrl: chain.rpcUrl,
      entryPoint: ENTRY_POINT_ADDRESS,
      sponsorPaymaster: parameters.paymasters.sponsor,
      tokenPaymaster: parameters.paymasters.token,
      tokens: [{ address: TEST_TOKEN_ADDRESS, tokenPerNative: (1000n * 10n ** 18n).toString(), guarantor: parameters.guarantor }],
      targets: [{ address: TEST_TOKEN_ADDRESS }],
      perUserPerDayWei: (5n * 10n ** 16n).toString(),
      globalPerDayWei: (10n * 10n ** 18n).toString(),
      maxGasPerOperation: 3_000_000,
    })),
  }
}
