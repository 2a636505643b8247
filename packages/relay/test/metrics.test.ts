import { createMetrics } from '@latchkey/service'
import { expect, test } from 'vitest'
import { redisStore } from '../src/index.js'
import { redisUrl } from './redis.js'

// The Redis store's round trips, timed by command, on a real redis-server.

test('behavior: every Redis command is timed by its name, and nothing else is labelled', async () => {
  const metrics = createMetrics('latchkey-relay')
  const store = await redisStore(await redisUrl(), { prefix: `metrics${process.pid}:`, metrics })
  try {
    await store.ping?.()
    const exposition = await metrics.exposition()
    const counted = exposition
      .split('\n')
      .filter((line) => line.startsWith('latchkey_relay_redis_round_trip_seconds_count{'))
      .map((line) => /command="([a-z]+)"/.exec(line)?.[1])
    expect(counted).toContain('ping')
    expect(exposition).not.toContain(`metrics${process.pid}:`)
  } finally {
    await store.close()
  }
})
