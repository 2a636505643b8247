'use client'
import { useEffect, useState } from 'react'
import { monogram, svgUrl } from './monogram.js'

type Icons = Readonly<Record<string, string>>
let icons: Icons | undefined
let loading: Promise<Icons> | undefined

/** @internal Downloads the wallet book's icons once (their own chunk); later calls share the download. */
export function loadWalletIcons(): Promise<Icons> {
  loading ??= import('./walletIcons.js').then(
    (module) => (icons = module.walletIcons),
    (error: unknown) => {
      // A failed download (offline) is tried again by the next list that needs the icons.
      loading = undefined
      throw error
    },
  )
  return loading
}

/** The wallet book's icons once downloaded; starts the download on first use. Undefined meanwhile. */
export function useWalletIcons(): Icons | undefined {
  const [loaded, setLoaded] = useState(icons)
  useEffect(() => {
    if (loaded) return
    let live = true
    // Offline, every wallet shows its monogram.
    loadWalletIcons().then(
      (value) => live && setLoaded(value),
      () => live && setLoaded({}),
    )
    return () => {
      live = false
    }
  }, [loaded])
  return loaded
}

export type WalletIconProps = {
  /** The wallet's own icon (a connector's, announced by the wallet), used first. */
  src?: string | undefined
  /** The wallet-book id whose bundled icon to show. */
  id?: string | undefined
  name: string
  /** Background of the monogram. */
  color?: string | undefined
  icons: Icons | undefined
  size: number
}

/**
 * A wallet's icon: its own, else the wallet book's bundled one, else its monogram; a skeleton while
 * the book's icons download. Decorative: the wallet's name is beside it.
 */
export function WalletIcon({ src, id, name, color, icons, size }: WalletIconProps) {
  if (!src && !icons) return <span className="lk-skeleton lk-icon-skeleton" style={{ width: size, height: size }} aria-hidden="true" />
  const bundled = id ? icons?.[id] : undefined
  return <img className="lk-wallet-icon" src={src ?? (bundled ? svgUrl(bundled) : monogram(name, color))} alt="" width={size} height={size} />
}
