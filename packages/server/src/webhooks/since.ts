import { SettingsError } from '@latchkey/service'

/** A moment given as an ISO 8601 time or as a span before `now` (`30m`, `6h`, `2d`). */
export function sinceOf(text: string, now: number): number {
  const span = /^(\d+)([mhd])$/.exec(text.trim())
  if (span) return now - Number(span[1]) * { m: 60_000, h: 3_600_000, d: 86_400_000 }[span[2] as 'm' | 'h' | 'd']
  const at = /^\d{4}-\d{2}-\d{2}T/.test(text.trim()) ? Date.parse(text.trim()) : Number.NaN
  if (Number.isNaN(at)) throw new SettingsError(`--since must be an ISO 8601 time (2026-11-28T08:00:00Z) or a span ago (30m, 6h, 2d), not ${text}`)
  return at
}
