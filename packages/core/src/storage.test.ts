import { describe, expect, test } from 'vitest'
import { createMemoryStorage, getDefaultStorage } from './storage.js'

describe('storage', () => {
  test('default: the memory storage keeps strings by key', () => {
    const storage = createMemoryStorage()
    storage.setItem('k', 'v')
    expect(storage.getItem('k')).toBe('v')
    storage.removeItem('k')
    expect(storage.getItem('k')).toBeNull()
  })

  test('behavior: outside a browser the default storage is memory', () => {
    const storage = getDefaultStorage()
    storage.setItem('k', 'v')
    expect(storage.getItem('k')).toBe('v')
    expect(typeof window).toBe('undefined')
  })
})
