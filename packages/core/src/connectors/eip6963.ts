import type { EIP1193Provider } from '../types.js'

/** EIP-6963 provider info, as a wallet announces it. */
export type EIP6963ProviderInfo = {
  readonly uuid: string
  readonly name: string
  /** A data: URI (EIP-6963 requires one); anything else is dropped for safety. */
  readonly icon: string
  readonly rdns: string
}

export type EIP6963ProviderDetail = {
  readonly info: EIP6963ProviderInfo
  readonly provider: EIP1193Provider
}

export type ProviderDiscovery = {
  getProviders(): readonly EIP6963ProviderDetail[]
  subscribe(listener: (providers: readonly EIP6963ProviderDetail[]) => void): () => void
  /** Asks wallets to announce again (EIP-6963 `requestProvider`). */
  request(): void
  destroy(): void
}

/**
 * Listens for EIP-6963 announcements. One entry per rdns: a wallet that announces twice, or a
 * page that asks twice, is listed once; a late announcement is added when it arrives.
 *
 * @example
 * const discovery = createProviderDiscovery(window)
 * discovery.subscribe((providers) => console.log(providers.map((p) => p.info.name)))
 */
export function createProviderDiscovery(target: EventTarget): ProviderDiscovery {
  let providers: readonly EIP6963ProviderDetail[] = []
  const listeners = new Set<(providers: readonly EIP6963ProviderDetail[]) => void>()

  function onAnnounce(event: Event) {
    const detail = parseDetail((event as CustomEvent<unknown>).detail)
    if (!detail || providers.some((p) => p.info.rdns === detail.info.rdns)) return
    providers = [...providers, detail]
    for (const listener of [...listeners]) listener(providers)
  }

  target.addEventListener('eip6963:announceProvider', onAnnounce)
  const self: ProviderDiscovery = {
    getProviders: () => providers,
    subscribe(listener) {
      listeners.add(listener)
      return () => void listeners.delete(listener)
    },
    request: () => void target.dispatchEvent(new Event('eip6963:requestProvider')),
    destroy() {
      target.removeEventListener('eip6963:announceProvider', onAnnounce)
      listeners.clear()
    },
  }
  self.request()
  return self
}

function parseDetail(detail: unknown): EIP6963ProviderDetail | undefined {
  if (!detail || typeof detail !== 'object') return undefined
  const { info, provider } = detail as { info?: Partial<Record<keyof EIP6963ProviderInfo, unknown>>; provider?: unknown }
  if (!info || typeof info !== 'object') return undefined
  const { uuid, name, icon, rdns } = info
  if (typeof uuid !== 'string' || typeof name !== 'string' || typeof rdns !== 'string') return undefined
  if (!name.trim() || !rdns.trim()) return undefined
  if (!provider || typeof (provider as { request?: unknown }).request !== 'function') return undefined
  const safeIcon = typeof icon === 'string' && icon.startsWith('data:image/') ? icon : ''
  return {
    info: Object.freeze({ uuid, name: name.trim(), icon: safeIcon, rdns: rdns.trim() }),
    provider: provider as EIP1193Provider,
  }
}
