import type { Client } from '@latchkey/core'
import { useContext } from 'react'
import { LatchkeyContext, type LatchkeyContextValue } from '../context.js'

/** @internal */
export function useLatchkeyContext(): LatchkeyContextValue {
  const context = useContext(LatchkeyContext)
  if (!context) throw new Error('Latchkey hooks must be used inside <LatchkeyProvider>.')
  return context
}

/**
 * The Latchkey client of the nearest provider.
 *
 * @example
 * const client = useClient()
 */
export function useClient(): Client {
  return useLatchkeyContext().client
}
