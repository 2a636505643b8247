'use client'
import { useState } from 'react'
import { monogram } from './monogram.js'

/**
 * The account's picture: its ENS avatar, or a monogram (the name's or the address's initial on a
 * colour from the address) when it has none, or when the image fails to load or is not an image.
 */
export function Avatar({ address, name, src }: { address: string; name: string | undefined; src: string | undefined }) {
  const [failed, setFailed] = useState<string>()
  const fallback = monogram(name ?? address.slice(2), `#${address.slice(2, 8)}`)
  const url = src && failed !== src ? src : fallback
  return <img className="lk-avatar" src={url} alt="" width={40} height={40} onError={() => src && setFailed(src)} />
}
