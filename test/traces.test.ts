import { Writable } from 'node:stream'
import { getFreePort } from '@latchkey/devnet'
import { createKms, generateApiKeyPair, type Kms } from '@latchkey/kms'
import { createAppServer } from '@latchkey/server'
import { createLogger, startTracing } from '@latchkey/service'
import { SpanKind } from '@opentelemetry/api'
import { InMemorySpanExporter } from '@opentelemetry/sdk-trace-base'
import { afterAll, beforeAll, expect, test } from 'vitest'

// Traces with an in-memory exporter: one sign-in request makes one trace, from the backend's route
// through its call to the kms (traceparent carried over HTTP) to the kms's activity and its
// database statements; and the backend's request id reaches the kms's log.

const origin = 'http://localhost:5173'
const exporter = new InMemorySpanExporter()
const kmsLines: { reqId?: string; msg: string }[] = []
let tracing: { stop(): Promise<void> }
let kms: Kms
let server: ReturnType<typeof createAppServer>

beforeAll(async () => {
  // Before the services: they decide when created whether to make spans.
  tracing = await startTracing({ service: 'latchkey-test', exporter })
  const kmsLog = new Writable({
    write(chunk: Buffer, _encoding, done) {
      for (const line of chunk.toString().split('\n').filter(Boolean)) kmsLines.push(JSON.parse(line))
      done()
    },
  })
  kms = createKms({ port: await getFreePort(), logger: createLogger({ name: 'latchkey-kms', destination: kmsLog }) })
  await kms.start()
  const backendKey = generateApiKeyPair()
  const { organizationId } = await kms.createParentOrganization({ name: 'Demo', userName: 'backend', publicKey: backendKey.apiPublicKey })
  server = createAppServer({
    port: await getFreePort(),
    kmsUrl: kms.url,
    organizationId,
    ...backendKey,
    sessionSignerPublicKey: kms.signerPublicKey,
    appName: 'Traces',
    allowedOrigins: [origin],
    // A request id exists while a request is handled when there is a log to carry it.
    logger: createLogger({ name: 'latchkey-server', level: 'silent' }),
  })
  await server.start()
})

afterAll(async () => {
  await server?.stop()
  await kms?.stop()
  await tracing?.stop()
})

test('behavior: one trace spans the backend route, the kms activity and its database statements', async () => {
  const response = await fetch(`${server.url}/auth/email/start`, {
    method: 'POST',
    body: JSON.stringify({ email: 'ada@example.com' }),
    headers: { 'content-type': 'application/json', origin, 'x-request-id': 'trace-test-1' },
  })
  expect(response.status).toBe(200)
  const route = exporter.getFinishedSpans().find((span) => span.name === 'POST /auth/email/start')!
  expect(route).toBeDefined()
  const trace = exporter.getFinishedSpans().filter((span) => span.spanContext().traceId === route.spanContext().traceId)
  const parentOf = (span: (typeof trace)[number]) => trace.find((each) => each.spanContext().spanId === span.parentSpanContext?.spanId)
  const activity = trace.find((span) => span.name === 'kms activity ACTIVITY_TYPE_INIT_OTP_V3')!
  const kmsRoute = parentOf(activity)!
  const statement = trace.find((span) => span.name === 'db insert' && parentOf(span) === activity)!
  expect([kmsRoute.name, parentOf(kmsRoute)]).toEqual(['POST /public/v1/submit/:op', route])
  expect([kmsRoute.kind, route.kind]).toEqual([SpanKind.SERVER, SpanKind.SERVER])
  expect(statement.attributes['db.system']).toBe('sqlite')
  expect(String(statement.attributes['db.query.text'])).toMatch(/^insert into "/)
})

test("behavior: the backend request id reaches the kms, on its own calls and on the delegated user's", async () => {
  expect(kmsLines.filter((line) => line.reqId === 'trace-test-1').map((line) => line.msg)).toEqual([
    'POST /public/v1/submit/create_sub_organization 200',
    // The new account's delegated user is narrowed next (narrowDelegated.ts), one call after the other.
    'POST /public/v1/submit/create_policies 200',
    'POST /public/v1/submit/update_root_quorum 200',
    'POST /public/v1/submit/init_otp 200',
  ])
})
