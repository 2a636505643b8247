import { type Address, getAddress, type Hex, isAddress } from 'viem'
import { z } from 'zod'

// The operator's sponsorship policy (`latchkey-server --paymaster-policy <file.json>`): which chains,
// which contracts and functions, how much gas per operation and how much wei per sender and in all
// per UTC day. Checked whole at start-up: a bad file stops the server with one line.

const address = z
  .string()
  .refine((value) => isAddress(value, { strict: false }), 'an address (0x and 40 hex digits)')
  .transform((value) => getAddress(value))
const selector = z
  .string()
  .regex(/^0x[0-9a-fA-F]{8}$/, 'a selector (0x and 8 hex digits)')
  .transform((value) => value.toLowerCase() as Hex)
/** Wei or gas as a decimal string or a safe integer (JSON numbers lose precision past 2^53). */
const amount = z
  .union([z.bigint().nonnegative(), z.string().regex(/^[0-9]{1,78}$/, 'a decimal integer'), z.number().int().nonnegative().max(Number.MAX_SAFE_INTEGER)])
  .transform((value) => BigInt(value))

const chainSchema = z.strictObject({
  chainId: z.number().int().positive(),
  rpcUrl: z.url({ protocol: /^https?$/ }),
  entryPoint: address,
  sponsorPaymaster: address,
  tokenPaymaster: address.optional(),
  tokens: z.array(z.strictObject({ address, tokenPerNative: amount.refine((value) => value > 0n, 'more than 0'), guarantor: address.optional() })).optional(),
  targets: z.array(z.strictObject({ address, selectors: z.array(selector).optional() })),
  perUserPerDayWei: amount,
  globalPerDayWei: amount,
  maxGasPerOperation: amount,
})

export const paymasterPolicySchema = z
  .strictObject({
    chains: z.array(chainSchema).min(1),
    sponsorName: z.string().min(1).max(100).optional(),
    accounts: z.enum(['users', 'any']).default('users'),
    validitySeconds: z.number().int().min(30).max(86_400).default(300),
  })
  .refine((policy) => new Set(policy.chains.map((chain) => chain.chainId)).size === policy.chains.length, 'each chainId once')
  .refine((policy) => policy.chains.every((chain) => !chain.tokens?.length || chain.tokenPaymaster), 'tokens need a tokenPaymaster on their chain')

/** A policy as written in its file (amounts as decimal strings or safe integers). */
export type PaymasterPolicyInput = z.input<typeof paymasterPolicySchema>
/** A policy checked: addresses checksummed, amounts as bigints, defaults filled in. */
export type PaymasterPolicy = z.output<typeof paymasterPolicySchema>
export type PaymasterChainPolicy = PaymasterPolicy['chains'][number]

/**
 * Checks a policy; throws `Error` with one line naming the first problem.
 *
 * @example
 * const policy = parsePaymasterPolicy(JSON.parse(readFileSync('policy.json', 'utf8')))
 */
export function parsePaymasterPolicy(input: unknown): PaymasterPolicy {
  const result = paymasterPolicySchema.safeParse(input)
  if (result.success) return result.data
  const issue = result.error.issues[0]!
  const where = issue.path.length ? issue.path.join('.') : 'the policy'
  throw new Error(`paymaster policy: ${where}: ${issue.message}`)
}

/** Whether `target` with calldata `data` is allowed on `chain`. */
export function targetAllowed(chain: PaymasterChainPolicy, target: Address, data: Hex): boolean {
  const rule = chain.targets.find((candidate) => candidate.address === getAddress(target))
  if (!rule) return false
  if (!rule.selectors) return true
  return data.length >= 10 && rule.selectors.includes(data.slice(0, 10).toLowerCase() as Hex)
}
