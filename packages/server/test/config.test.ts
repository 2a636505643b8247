import { expect, test } from 'vitest'
import { createServerApp, openStore } from '../src/index.js'

// GET /auth/config: what the browser's embedded wallet needs, and nothing secret.

const base = {
  kmsUrl: 'http://127.0.0.1:8090',
  organizationId: 'org-1',
  apiPublicKey: '02'.padEnd(66, '1'),
  apiPrivateKey: 'ab'.repeat(32),
  appName: 'Demo',
  allowedOrigins: ['http://localhost:5173'],
}

test('default: the parent organization, the kms url browsers use and the frames url; never the API key', async () => {
  const app = createServerApp({ ...base, store: await openStore(':memory:'), publicKmsUrl: 'http://localhost:8090', framesUrl: 'http://localhost:8091' })
  const response = await app.request('/auth/config', { headers: { origin: 'http://localhost:5173' } })
  expect(response.headers.get('access-control-allow-origin')).toBe('http://localhost:5173')
  const text = await response.text()
  expect(JSON.parse(text)).toEqual({ organizationId: 'org-1', kmsUrl: 'http://localhost:8090', framesUrl: 'http://localhost:8091' })
  expect(text).not.toContain(base.apiPrivateKey)
})

test('behavior: without a public url the kms url is published, and no frames url when none is set', async () => {
  const app = createServerApp({ ...base, store: await openStore(':memory:') })
  expect(await (await app.request('/auth/config')).json()).toEqual({ organizationId: 'org-1', kmsUrl: 'http://127.0.0.1:8090' })
})

test('behavior: an app that offers guests says so (guests: true), and POST /auth/guest answers; without the option neither', async () => {
  const offering = createServerApp({ ...base, store: await openStore(':memory:'), guests: true })
  expect(await (await offering.request('/auth/config')).json()).toEqual({ organizationId: 'org-1', kmsUrl: 'http://127.0.0.1:8090', guests: true })
  const closed = createServerApp({ ...base, store: await openStore(':memory:') })
  const response = await closed.request('/auth/guest', {
    method: 'POST',
    body: JSON.stringify({ sessionPublicKey: base.apiPublicKey }),
    headers: { 'content-type': 'application/json', origin: 'http://localhost:5173' },
  })
  expect(response.status).toBe(404)
})
