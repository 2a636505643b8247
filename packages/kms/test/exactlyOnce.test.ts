import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { ApiKeyStamper } from '@turnkey/api-key-stamper'
import { generateP256KeyPair } from '@turnkey/crypto'
import type { TurnkeyClient } from '@turnkey/http'
import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import { generateApiKeyPair, type Mail, type Mailer } from '../src/index.js'
import { testBackend } from './database.js'
import { ethereumAccount, startKms } from './harness.js'

// Every acknowledged activity happened exactly once, and a refused one not at all: its row and its
// effects commit together; the same bytes submitted at the same time (on one instance, or on two
// sharing a database) answer one activity; mail leaves only after the commit, from the outbox.

const dir = mkdtempSync(join(tmpdir(), 'latchkey-kms-once-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

/** Posts the exact bytes `text`, stamped by `keys`, to `url`. */
async function postRaw(url: string, keys: ReturnType<typeof generateApiKeyPair>, path: string, text: string) {
  const { stampHeaderName, stampHeaderValue } = await new ApiKeyStamper(keys).stamp(text)
  const response = await fetch(`${url}${path}`, { method: 'POST', body: text, headers: { [stampHeaderName]: stampHeaderValue } })
  return {
    status: response.status,
    body: (await response.json()) as { activity: { id: string; status: string; result: Record<string, Record<string, string>> } },
  }
}

const sessionKeys = async (client: TurnkeyClient, organizationId: string, userId: string) =>
  (await client.getApiKeys({ organizationId, userId })).apiKeys.filter((key) => key.credential.type === 'CREDENTIAL_TYPE_READ_WRITE_SESSION_KEY_P256')

describe(`one instance (${testBackend})`, () => {
  let t: Awaited<ReturnType<typeof startKms>>
  beforeAll(async () => {
    t = await startKms()
  })
  afterAll(() => t.kms.stop())

  test('behavior: ten concurrent identical create_read_write_session give one session key and ten identical answers', async () => {
    const sub = await t.subOrganization()
    const body = JSON.stringify({
      type: 'ACTIVITY_TYPE_CREATE_READ_WRITE_SESSION_V2',
      timestampMs: t.timestampMs(),
      organizationId: sub.organizationId,
      parameters: { targetPublicKey: generateP256KeyPair().publicKeyUncompressed, userId: sub.userId, expirationSeconds: '900' },
    })
    const answers = await Promise.all(Array.from({ length: 10 }, () => postRaw(t.kms.url, sub.keys, '/public/v1/submit/create_read_write_session', body)))
    expect(answers.map((answer) => answer.status)).toEqual(Array(10).fill(200))
    const [first] = answers
    for (const answer of answers) expect(answer.body).toEqual(first!.body)
    const keys = await sessionKeys(sub.client, sub.organizationId, sub.userId)
    expect(keys.map((key) => key.apiKeyId)).toEqual([first!.body.activity.result['createReadWriteSessionResultV2']!['apiKeyId']])
  })

  test('error: a refused activity writes nothing, not even what it wrote before it was refused', async () => {
    const before = (await t.backend.getSubOrgIds({ organizationId: t.parent.organizationId })).organizationIds.length
    const rootKey = generateApiKeyPair()
    // The users and keys are written before the wallet's second account turns out invalid.
    await expect(
      t.backend.createSubOrganization({
        type: 'ACTIVITY_TYPE_CREATE_SUB_ORGANIZATION_V8',
        timestampMs: t.timestampMs(),
        organizationId: t.parent.organizationId,
        parameters: {
          subOrganizationName: 'half made',
          rootQuorumThreshold: 1,
          rootUsers: [
            {
              userName: 'root',
              apiKeys: [{ apiKeyName: 'root', publicKey: rootKey.apiPublicKey, curveType: 'API_KEY_CURVE_P256' }],
              authenticators: [],
              oauthProviders: [],
            },
          ],
          wallet: { walletName: 'w', accounts: [ethereumAccount, { ...ethereumAccount, path: 'not a path' }] },
        },
      }),
    ).rejects.toThrow('Turnkey error 3: invalid BIP-32 path not a path')
    expect((await t.backend.getSubOrgIds({ organizationId: t.parent.organizationId })).organizationIds).toHaveLength(before)
    // The root user's key was never registered.
    await expect(t.client(rootKey).getWhoami({ organizationId: t.parent.organizationId })).rejects.toThrow('Turnkey error 16')
  })

  test('behavior: a resubmission of a refused activity runs it again (a refusal is no activity)', async () => {
    const body = JSON.stringify({
      type: 'ACTIVITY_TYPE_CREATE_WALLET',
      timestampMs: t.timestampMs(),
      organizationId: t.parent.organizationId,
      parameters: { walletName: 'twice refused', accounts: [{ ...ethereumAccount, curve: 'CURVE_ED25519' }] },
    })
    for (let i = 0; i < 2; i++) expect((await postRaw(t.kms.url, t.parentKey, '/public/v1/submit/create_wallet', body)).status).toBe(400)
  })
})

describe(`mail after commit (${testBackend})`, () => {
  /** A mail server that is down until `up` is set; what it accepted. */
  const server = { up: false, sent: [] as Mail[] }
  const mailer: Mailer = {
    async send(mail) {
      if (!server.up) throw new Error('connect ECONNREFUSED (the test mail server is down)')
      server.sent.push(mail)
    },
  }
  let t: Awaited<ReturnType<typeof startKms>>
  beforeAll(async () => {
    // Retries only when the test asks (sendDueMail), so each step is seen as it happens.
    t = await startKms({ mailer, mailRetryIntervalMs: 0 })
  })
  afterAll(() => t.kms.stop())

  test('behavior: mail that cannot be sent now is kept and sent by the retry; the activity completed once', async () => {
    const sub = await t.subOrganization({ email: 'later@example.test' })
    const { activity } = await t.backend.emailAuth({
      type: 'ACTIVITY_TYPE_EMAIL_AUTH_V3',
      timestampMs: t.timestampMs(),
      organizationId: sub.organizationId,
      parameters: {
        email: 'later@example.test',
        targetPublicKey: generateP256KeyPair().publicKeyUncompressed,
        emailCustomization: { appName: 'Demo' },
      },
    })
    expect(activity.status).toBe('ACTIVITY_STATUS_COMPLETED')
    expect(server.sent).toEqual([])
    expect(await t.kms.outbox()).toEqual([
      { to: 'later@example.test', status: 'pending', attempts: 1, lastError: 'connect ECONNREFUSED (the test mail server is down)' },
    ])
    // Not due yet: the first retry waits a second.
    server.up = true
    expect(await t.kms.sendDueMail()).toBe(0)
    t.clock.now += 1000
    expect(await t.kms.sendDueMail()).toBe(1)
    expect(server.sent.map((mail) => [mail.to, mail.subject])).toEqual([['later@example.test', 'Sign in to Demo']])
    expect(await t.kms.outbox()).toEqual([])
    // Sent once: nothing is left to send again.
    t.clock.now += 60_000
    expect(await t.kms.sendDueMail()).toBe(0)
  })

  test('behavior: a mail still not sent when its credential has expired is dropped, not sent', async () => {
    server.up = false
    const sub = await t.subOrganization({ email: 'never@example.test' })
    await t.backend.initOtpAuth({
      type: 'ACTIVITY_TYPE_INIT_OTP_AUTH_V3',
      timestampMs: t.timestampMs(),
      organizationId: sub.organizationId,
      parameters: { otpType: 'OTP_TYPE_EMAIL', contact: 'never@example.test', appName: 'Demo' },
    })
    t.clock.now += 16 * 60_000
    server.up = true
    expect(await t.kms.sendDueMail()).toBe(0)
    expect(server.sent.filter((mail) => mail.to === 'never@example.test')).toEqual([])
    expect(await t.kms.outbox()).toEqual([{ to: 'never@example.test', status: 'failed', attempts: 1, lastError: 'expired before it could be sent' }])
  })
})
