import { afterAll, expect, test } from 'vitest'
import { createStageProfile, STAGES } from '../src/index.js'
import { startKms } from './harness.js'

// The stage profile (src/http/stages.ts) bench:kms prints: which hook charges which stage, on a
// clock that advances one µs at each read, so that each stage's total is the number of laps it got.

let reads = 0
const stages = createStageProfile(() => ++reads)
const setup = await startKms({ stageProfile: stages })
afterAll(() => setup.kms.stop())

const sign = (sub: Awaited<ReturnType<typeof setup.subOrganization>>, payload: string) =>
  sub.client.signRawPayload({
    type: 'ACTIVITY_TYPE_SIGN_RAW_PAYLOAD_V2',
    timestampMs: setup.timestampMs(),
    organizationId: sub.organizationId,
    parameters: { signWith: sub.address, payload, encoding: 'PAYLOAD_ENCODING_HEXADECIMAL', hashFunction: 'HASH_FUNCTION_KECCAK256' },
  })

test('default: off, a signature reads no clock and counts nothing', async () => {
  const sub = await setup.subOrganization()
  reads = 0
  expect((await sign(sub, '0x1901')).activity.status).toBe('ACTIVITY_STATUS_COMPLETED')
  expect(reads).toBe(0)
  expect(stages.take()).toEqual({ requests: 0, micros: Object.fromEntries(STAGES.map((stage) => [stage, 0])) })
})

test('behavior: on, each stage of a signature is charged by its own laps, from the first middleware to the audit event', async () => {
  const sub = await setup.subOrganization()
  stages.take()
  stages.enable(true)
  expect((await sign(sub, '0x1902')).activity.status).toBe('ACTIVITY_STATUS_COMPLETED')
  stages.enable(false)
  expect(stages.take()).toEqual({
    requests: 1,
    micros: {
      // The gate's start, the body parsed, and the way out through CORS.
      http: 3,
      // The gate and the count.
      rateLimit: 2,
      stamp: 1,
      authentication: 1,
      // The kms's own rules, then the permission model.
      authorization: 2,
      // The row built, then inserted.
      activity: 2,
      signature: 1,
      // The activity's view, then Hono's way back to the audit.
      serialisation: 2,
      audit: 1,
    },
  })
  // Off again: another signature is not counted.
  expect((await sign(sub, '0x1903')).activity.status).toBe('ACTIVITY_STATUS_COMPLETED')
  expect(stages.take().requests).toBe(0)
})
