import type { KmsError } from './errors.js'

const kept = new WeakSet<KmsError>()

/**
 * Marks a refusal whose writes still commit (without an activity row): the one such write is a
 * wrong OTP guess, counted so guessing runs out. Every other refusal writes nothing.
 *
 * @example
 * throw keepingWrites(new KmsError(GrpcCode.invalidArgument, 'invalid code: 2 attempts left'))
 */
export function keepingWrites(error: KmsError): KmsError {
  kept.add(error)
  return error
}

/** Whether `error` is a refusal whose writes commit. */
export const keepsWrites = (error: unknown): error is KmsError => kept.has(error as KmsError)
