import { type Address, decodeAbiParameters, decodeFunctionData, type Hex, parseAbi } from 'viem'

// What a UserOperation's callData asks the account to do, for the two accounts the service knows:
// Latchkey's BatchExecutor (ERC-7821 `execute(bytes32,bytes)` in batch mode, no opData) and
// eth-infinitism's Simple7702Account (`execute`, `executeBatch`: what viem's
// `toSimple7702SmartAccount` sends). Anything else is not decoded, so not sponsored.

/** ERC-7821's single-batch mode with the default execution type and no opData. */
export const BATCH_MODE: Hex = '0x0100000000000000000000000000000000000000000000000000000000000000'

const ACCOUNT_ABI = parseAbi([
  'function execute(bytes32 mode, bytes executionData)',
  'function execute(address target, uint256 value, bytes data)',
  'function executeBatch((address target, uint256 value, bytes data)[] calls)',
])
const EXECUTIONS = [{ type: 'tuple[]', components: [{ type: 'address' }, { type: 'uint256' }, { type: 'bytes' }] }] as const

export type DecodedCall = { target: Address; value: bigint; data: Hex }

/** The account's calls, or `undefined` when the callData is none of the shapes above. */
export function decodeAccountCalls(callData: Hex): DecodedCall[] | undefined {
  try {
    const decoded = decodeFunctionData({ abi: ACCOUNT_ABI, data: callData })
    if (decoded.functionName === 'executeBatch') return decoded.args[0].map((call) => ({ target: call.target, value: call.value, data: call.data }))
    const args = decoded.args as readonly unknown[]
    if (args.length === 3) {
      const [target, value, data] = args as [Address, bigint, Hex]
      return [{ target, value, data }]
    }
    const [mode, executionData] = args as [Hex, Hex]
    if (mode.toLowerCase() !== BATCH_MODE) return undefined
    const [executions] = decodeAbiParameters(EXECUTIONS, executionData)
    return executions.map(([target, value, data]) => ({ target, value, data }))
  } catch {
    return undefined
  }
}
