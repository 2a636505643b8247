'use client'
import { useEffect, useState } from 'react'

/** Says "Hydrated" once React has taken over the server-rendered page, so the test knows its clicks reach React. */
export function HydrationStatus() {
  const [hydrated, setHydrated] = useState(false)
  useEffect(() => setHydrated(true), [])
  return <p role="status">{hydrated ? 'Hydrated' : 'Server-rendered'}</p>
}
