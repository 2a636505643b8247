import { describe, expect, test } from 'vitest'
import { createLogger, currentRequestId, scrub, withRequestId } from '../src/index.js'

/** A logger writing into an array, one parsed line each. */
function capture(options: { secrets?: string[]; level?: 'info' | 'debug' | 'warn' } = {}) {
  const written: string[] = []
  const logger = createLogger({ name: 'latchkey-test', ...options, destination: { write: (line: string) => void written.push(line) } })
  return { logger, written, lines: () => written.map((line) => JSON.parse(line) as Record<string, unknown>) }
}

describe('createLogger', () => {
  test('default: one JSON object a line, the level as a word, an ISO time, the service', () => {
    const { logger, written, lines } = capture()
    logger.info({ url: 'http://127.0.0.1:8090' }, 'kms listening')
    logger.debug('not at info')
    expect(written).toHaveLength(1)
    expect(written[0]!.endsWith('\n')).toBe(true)
    expect(lines()[0]).toEqual({
      level: 'info',
      time: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/),
      service: 'latchkey-test',
      url: 'http://127.0.0.1:8090',
      msg: 'kms listening',
    })
  })

  test('behavior: lines logged while handling a request carry its id, also after an await', async () => {
    const { logger, lines } = capture()
    await withRequestId('req-1', async () => {
      expect(currentRequestId()).toBe('req-1')
      await new Promise((resolve) => setImmediate(resolve))
      logger.warn('inside')
    })
    logger.warn('outside')
    expect(lines().map((line) => [line.msg, line.reqId])).toEqual([
      ['inside', 'req-1'],
      ['outside', undefined],
    ])
  })

  test('behavior: configured secrets never reach a line, even JSON-escaped or inside an error', () => {
    const password = 'pa"ss\\word-42'
    const key = 'ab'.repeat(32)
    const { logger, written } = capture({ secrets: [password, key, 'short'] })
    logger.error({ err: new Error(`connect failed for postgres://kms:${password}@db/kms`), key }, `sealing with ${key}`)
    logger.info('a short word stays: short')
    const text = written.join('')
    expect(text).not.toContain(key)
    expect(text).not.toContain(JSON.stringify(password).slice(1, -1))
    expect(text).toContain('postgres://kms:[redacted]@db/kms')
    expect(text).toContain('sealing with [redacted]')
    expect(text).toContain('a short word stays: short')
  })

  test('behavior: fields named for credentials are removed', () => {
    const { logger, lines } = capture()
    logger.info({ headers: { cookie: 'latchkey_session=abc' }, request: { authorization: 'Bearer x', path: '/' }, apiPrivateKey: 'k', kept: 1 }, 'line')
    expect(lines()[0]).toMatchObject({ request: { path: '/' }, kept: 1 })
    expect(lines()[0]).not.toHaveProperty('headers')
    expect(lines()[0]).not.toHaveProperty('apiPrivateKey')
    expect(lines()[0]!.request).not.toHaveProperty('authorization')
  })
})

test('scrub: replaces each secret of 8 characters or more', () => {
  expect(scrub('could not connect to postgres://kms:hunter22@db/kms', ['hunter22', 'kms'])).toBe('could not connect to postgres://kms:[redacted]@db/kms')
})
