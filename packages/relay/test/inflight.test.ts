import { expect, test } from 'vitest'
import { InFlight } from '../src/inflight.js'

test('behavior: entries are taken once each by id, in any order, as a Map would answer', () => {
  const inflight = new InFlight<string>()
  const reference = new Map<number, string>()
  let next = 1
  let seed = 7
  const random = () => (seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31) / 2 ** 31
  for (let step = 0; step < 20_000; step++) {
    const roll = random()
    if (roll < 0.45) {
      // Ids ascend, with gaps: other connections take the numbers between.
      next += 1 + Math.floor(random() * 3)
      inflight.add(next, `m${next}`)
      reference.set(next, `m${next}`)
    } else {
      // Mostly the oldest (acks come in about the order sent), sometimes any, sometimes one never sent or taken already.
      const ids = [...reference.keys()]
      const id = roll < 0.8 && ids.length ? ids[0]! : roll < 0.95 && ids.length ? ids[Math.floor(random() * ids.length)]! : Math.floor(random() * (next + 5))
      expect(inflight.take(id)).toBe(reference.get(id))
      reference.delete(id)
    }
    expect(inflight.size).toBe(reference.size)
  }
  for (const [id, item] of reference) expect(inflight.take(id)).toBe(item)
  expect(inflight.size).toBe(0)
  expect(inflight.take(next)).toBeUndefined()
})
