'use client'
import { getChainId, type Hex } from '@latchkey/core'
import { lazy, Suspense } from 'react'
import type { LatchkeyContextValue } from '../context.js'
import { trackTransaction, updateTransaction } from './transactions.js'

// The toasts' view downloads with the first send, never with the page.
const ToastView = lazy(() => import('./ToastView.js'))

/** @internal The toasts, rendered by the provider once a send has started (unless its `toasts` is false). */
export function TransactionToasts({ theme }: { theme: 'light' | 'dark' | 'auto' }) {
  return (
    <Suspense fallback={null}>
      <ToastView theme={theme} />
    </Suspense>
  )
}

/**
 * @internal Sends through `send`, tracking it: pending now, then the hash, then confirmed or failed
 * (followed on chain by a module loaded after the send). The send's own result or error passes through.
 */
export async function sendTracked<result>(
  context: Pick<LatchkeyContextValue, 'client' | 'mountToasts'>,
  entry: { kind: 'transaction' | 'calls'; chainId: number | undefined; retry(): void },
  send: () => Promise<result>,
  sent: (result: result) => { hash: Hex } | { callsId: string },
): Promise<result> {
  const { client } = context
  context.mountToasts(TransactionToasts)
  // Without a chain in the parameters the wallet sends on its current one.
  const chainId = entry.chainId ?? getChainId(client)
  const id = trackTransaction(client, { ...entry, chainId })
  let result: result
  try {
    result = await send()
  } catch (error) {
    updateTransaction(client, id, { status: 'failed', error })
    throw error
  }
  const what = sent(result)
  if ('hash' in what) updateTransaction(client, id, { hash: what.hash })
  void import('./confirm.js').then((module) => module.confirmTransaction(client, id, { ...what, chainId }))
  return result
}
