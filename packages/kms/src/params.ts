import { z } from 'zod'
import { invalid } from './errors.js'
import { listOf } from './lists.js'

// Parameter schemas shared by activities and queries, and the one way their problems are reported.

/**
 * Parses with a schema; the first problem becomes an InvalidArgument naming the field, and every
 * problem is listed in `details` as a `google.rpc.BadRequest` field violation.
 *
 * @example
 * const { userId } = parse(z.object({ userId: z.string() }), params)
 */
export function parse<schema extends z.ZodType>(schema: schema, value: unknown): z.infer<schema> {
  const result = schema.safeParse(value)
  if (result.success) return result.data
  const field = (issue: { path: readonly PropertyKey[] }) => issue.path.map(String).join('.') || '(root)'
  const issue = result.error.issues[0]!
  throw invalid(`invalid parameters: ${field(issue)}: ${issue.message}`, [
    {
      '@type': 'type.googleapis.com/google.rpc.BadRequest',
      fieldViolations: result.error.issues.map((each) => ({ field: field(each), description: each.message })),
    },
  ])
}

/** Unsigned int64 fields travel as decimal strings. */
export const uint64 = z.string().regex(/^\d{1,15}$/, 'must be a whole number, as a string')

/** An API key as create_api_keys, create_users and create_sub_organization take it. */
export const apiKeyParams = z.object({
  apiKeyName: z.string().min(1).max(256),
  publicKey: z.string().regex(/^0[23][0-9a-f]{64}$/, 'must be a compressed P-256 public key in lowercase hex'),
  curveType: z.enum(['API_KEY_CURVE_P256']).optional(),
  expirationSeconds: uint64.optional(),
})
export type ApiKeyParams = z.infer<typeof apiKeyParams>

/** A passkey registration (its attestation is verified before anything is written). */
export const authenticatorParams = z.object({
  authenticatorName: z.string().min(1).max(256),
  challenge: z.string().min(1),
  attestation: z.object({
    credentialId: z.string().min(1),
    clientDataJson: z.string().min(1),
    attestationObject: z.string().min(1),
    transports: listOf(z.string(), 'transports').default([]),
  }),
})

/** The client's key a bundle is encrypted to. */
export const targetPublicKey = z.string().regex(/^(?:0[23][0-9a-f]{64}|04[0-9a-f]{128})$/i, 'must be a P-256 public key in hex (33 or 65 bytes)')

/** Ids of things to act on: at least one, none twice. */
export const ids = (what: string) =>
  z
    .array(z.string().min(1))
    .min(1, `name at least one ${what}`)
    .max(100)
    .refine((list) => new Set(list).size === list.length, `a ${what} is named twice`)

/** A required non-empty string field of a query body. */
export function requiredString(body: Record<string, unknown>, key: string): string {
  const value = body[key]
  if (typeof value !== 'string' || !value) throw invalid(`${key} is required`)
  return value
}
