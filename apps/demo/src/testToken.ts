import { type Address, encodeFunctionData, erc20Abi, maxUint256, numberToHex, parseAbi, parseEther, parseUnits } from 'viem'
import { RECIPIENT } from './typedData.js'

// The demo's ERC-20 on the local chains (contracts/TestToken.sol, deployed by `npm start`) and the
// requests its buttons make. Plain data and encoders: the token panel and the headless page share them.

/** The Test Token (TKN, 18 decimals): the same CREATE2 address on both chains; the devnet bakes it in as `VITE_LATCHKEY_TOKEN`. */
export const TOKEN: Address = import.meta.env.VITE_LATCHKEY_TOKEN ?? '0xf0F3A2044dEC38152A467aD6ABaC0AB98e50516d'
export const TOKEN_SYMBOL = 'TKN'
export const TOKEN_DECIMALS = 18

/** Where "Send tokens" sends and whom "Approve unlimited" and "Grant permission" name: anvil's last test account, as for the ETH transfer. */
export const TEST_ACCOUNT: Address = RECIPIENT

/**
 * Who mints for "Get test tokens": anvil's test account #5, unlocked on the dev chains, so the
 * chain signs the mint itself and the user is asked nothing. Nothing else in the demo sends from it.
 */
export const FAUCET: Address = '0x9965507D1a55bcC2695C58ba16FB37d819B0A4dc'

export const MINT_AMOUNT = parseUnits('100', TOKEN_DECIMALS)
export const SEND_AMOUNT = parseUnits('1.5', TOKEN_DECIMALS)
/** The grant's allowance: 5 TKN per day. */
export const GRANT_ALLOWANCE = parseUnits('5', TOKEN_DECIMALS)
export const GRANT_PERIOD_SECONDS = 86_400
/**
 * The grant's native allowance, for network fees only (the demo sends no ETH under it): 0.01 ETH
 * per day. The kms charges each transaction's fee ceiling (gas × maxFeePerGas) to it, and refuses
 * any fee under a grant without one; on anvil (1 gwei base fee) a send's ceiling is about 0.0001 ETH.
 */
export const GRANT_FEE_ALLOWANCE = parseEther('0.01')
export const GRANT_LIFETIME_SECONDS = 3_600

/** The TestToken's open mint, beside the standard ERC-20 functions. */
const mintAbi = parseAbi(['function mint(address to, uint256 amount)'])

/** `mint(to, 100 TKN)`: the faucet's call. */
export const mintData = (to: Address) => encodeFunctionData({ abi: mintAbi, functionName: 'mint', args: [to, MINT_AMOUNT] })
/** `transfer(TEST_ACCOUNT, 1.5 TKN)`. */
export const transferData = () => encodeFunctionData({ abi: erc20Abi, functionName: 'transfer', args: [TEST_ACCOUNT, SEND_AMOUNT] })
/** `approve(TEST_ACCOUNT, 2^256 - 1)`: the unlimited approval the consent frame warns about. */
export const approveUnlimitedData = () => encodeFunctionData({ abi: erc20Abi, functionName: 'approve', args: [TEST_ACCOUNT, maxUint256] })

/**
 * The ERC-7715 `wallet_grantPermissions` request (the ERC's first shape, as
 * packages/embedded/src/permissions.ts reads it): the account may spend up to 5 TKN per rolling
 * day without a prompt, and up to 0.01 ETH a day on those transactions' network fees, for one hour
 * from `now`. The signer is the account itself, so the wallet
 * binds its own key. ERC-7715 allowances limit the amount, not the recipient: the demo only ever
 * sends to TEST_ACCOUNT.
 *
 * @example
 * await provider.request({ method: 'wallet_grantPermissions', params: [grantRequest({ account, chainId, now: Date.now() })] })
 */
export function grantRequest({ account, chainId, now }: { account: Address; chainId: number; now: number }) {
  const seconds = Math.floor(now / 1000)
  return {
    chainId: numberToHex(chainId),
    address: account,
    expiry: seconds + GRANT_LIFETIME_SECONDS,
    signer: { type: 'account', data: { id: account } },
    permissions: [
      {
        type: 'erc20-recurring-allowance',
        data: { token: TOKEN, allowance: numberToHex(GRANT_ALLOWANCE), start: seconds, period: GRANT_PERIOD_SECONDS },
        policies: [],
      },
      {
        type: 'native-token-recurring-allowance',
        data: { allowance: numberToHex(GRANT_FEE_ALLOWANCE), start: seconds, period: GRANT_PERIOD_SECONDS },
        policies: [],
      },
    ],
  } as const
}
