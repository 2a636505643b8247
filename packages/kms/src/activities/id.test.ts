import { describe, expect, it } from 'vitest'
import { newActivityId } from './id.js'

describe('newActivityId', () => {
  it('is a version 7 UUID whose first 48 bits are the milliseconds it was made at', () => {
    const at = Date.UTC(2026, 10, 30, 7, 45, 12, 345)
    const id = newActivityId(at)
    expect(id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/)
    expect(Number.parseInt(id.slice(0, 8) + id.slice(9, 13), 16)).toBe(at)
  })

  it('sorts by time, and two made in the same millisecond differ', () => {
    const earlier = newActivityId(1_764_488_712_345)
    const later = newActivityId(1_764_488_712_346)
    expect(earlier < later).toBe(true)
    const same = new Set(Array.from({ length: 1000 }, () => newActivityId(1_764_488_712_345)))
    expect(same.size).toBe(1000)
  })
})
