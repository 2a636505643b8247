import type { Client } from '@latchkey/core'
import type { MessageKey } from '../i18n/en.js'
import type { Translate } from '../i18n/useMessages.js'
import type { TrackedTransaction } from './transactions.js'

/** @internal The catalogue key of a send's status: "Transaction pending…", "Batch confirmed", … */
export function statusKey(entry: TrackedTransaction): MessageKey {
  const batch = entry.kind === 'calls'
  if (entry.status === 'pending') return batch ? 'batchPending' : 'txPending'
  if (entry.status === 'confirmed') return batch ? 'batchConfirmed' : 'txConfirmed'
  return batch ? 'batchFailed' : 'txFailed'
}

/** @internal Why a send failed, for display: reverted on chain, or the error's text in the locale. */
export function failureText(entry: TrackedTransaction, t: Translate): string {
  return entry.reverted ? t('txReverted') : t.error(entry.error)
}

/** @internal The explorer page of a send with a hash, when its chain has an explorer. */
export function explorerLink(client: Client, entry: TrackedTransaction): { href: string; name: string | undefined } | undefined {
  const explorer = client.chains.find((chain) => chain.id === entry.chainId)?.blockExplorers?.default
  if (!explorer || !entry.hash) return undefined
  return { href: `${explorer.url.replace(/\/$/, '')}/tx/${entry.hash}`, name: explorer.name }
}
