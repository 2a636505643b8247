import { getFreePort } from '@latchkey/devnet'
import { decryptCredentialBundle, generateP256KeyPair, getPublicKey } from '@turnkey/crypto'
import { type ParsedMail, simpleParser } from 'mailparser'
import { SMTPServer } from 'smtp-server'
import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import { SMTP_URL_VARIABLE, smtpMailer } from '../src/index.js'
import { startKms } from './harness.js'

// Mail over SMTP: a real TCP round trip from the kms (nodemailer) to an SMTP server in this
// process (smtp-server), each message parsed (mailparser) and its text checked.

type Received = ParsedMail & { envelopeTo: string[] }
const received: Received[] = []
const waiting: { to: string; resolve: (mail: Received) => void }[] = []

/** The next message to `to`, whether it has arrived already or not. */
function mailTo(to: string): Promise<Received> {
  const index = received.findIndex((mail) => mail.envelopeTo.includes(to))
  if (index >= 0) return Promise.resolve(received.splice(index, 1)[0]!)
  return new Promise((resolve) => waiting.push({ to, resolve }))
}

const server = new SMTPServer({
  authOptional: true,
  disabledCommands: ['STARTTLS'],
  logger: false,
  onRcptTo(address, _session, callback) {
    callback(address.address.endsWith('@blocked.test') ? Object.assign(new Error('mailbox unavailable'), { responseCode: 550 }) : null)
  },
  onData(stream, session, callback) {
    simpleParser(stream).then(
      (parsed) => {
        const mail = Object.assign(parsed, { envelopeTo: session.envelope.rcptTo.map((rcpt) => rcpt.address) })
        callback()
        const index = waiting.findIndex((wait) => mail.envelopeTo.includes(wait.to))
        if (index >= 0) waiting.splice(index, 1)[0]!.resolve(mail)
        else received.push(mail)
      },
      (error: Error) => callback(error),
    )
  },
})
let smtpUrl: string

beforeAll(async () => {
  const port = await getFreePort()
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject)
    server.listen(port, '127.0.0.1', () => resolve())
  })
  smtpUrl = `smtp://127.0.0.1:${port}`
})
afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())))

describe('createKms({ smtp })', () => {
  let harness: Awaited<ReturnType<typeof startKms>>
  beforeAll(async () => {
    harness = await startKms({ smtp: { url: smtpUrl, from: 'Latchkey <login@latchkey.test>' } })
  })
  afterAll(() => harness.kms.stop())

  test('default: the email_auth credential goes out by SMTP and signs the user in; the dev inbox is off', async () => {
    const sub = await harness.subOrganization({ email: 'smtp-user@example.test' })
    const embedded = generateP256KeyPair()
    const { activity } = await harness.backend.emailAuth({
      type: 'ACTIVITY_TYPE_EMAIL_AUTH_V3',
      timestampMs: harness.timestampMs(),
      organizationId: sub.organizationId,
      parameters: { email: 'smtp-user@example.test', targetPublicKey: embedded.publicKeyUncompressed, emailCustomization: { appName: 'Latchkey Demo' } },
    })
    expect(activity.result.emailAuthResult!.userId).toBe(sub.userId)
    const mail = await mailTo('smtp-user@example.test')
    expect([mail.subject, mail.from?.text, mail.envelopeTo]).toEqual([
      'Sign in to Latchkey Demo',
      '"Latchkey" <login@latchkey.test>',
      ['smtp-user@example.test'],
    ])
    const lines = mail.text!.split('\n')
    expect([lines[0], lines[4]]).toEqual(['Your sign-in credential for Latchkey Demo:', 'It works for 15 minutes.'])
    const apiPrivateKey = decryptCredentialBundle(lines[2]!, embedded.privateKey)
    const user = harness.client({ apiPrivateKey, apiPublicKey: Buffer.from(getPublicKey(apiPrivateKey, true)).toString('hex') })
    expect(await user.getWhoami({ organizationId: sub.organizationId })).toMatchObject({ userId: sub.userId })
    expect(mail.html).toContain(`<code>${lines[2]}</code>`)
    expect((await fetch(`${harness.kms.url}/dev/mailbox.json`)).status).toBe(404)
  })

  test('behavior: a recipient the server refuses for good: the invitation stays, the mail is not tried again', async () => {
    const sub = await harness.subOrganization()
    const { activity } = await sub.client.createInvitations({
      type: 'ACTIVITY_TYPE_CREATE_INVITATIONS',
      timestampMs: harness.timestampMs(),
      organizationId: sub.organizationId,
      parameters: {
        invitations: [
          { receiverUserName: 'x', receiverUserEmail: 'x@blocked.test', receiverUserTags: [], accessType: 'ACCESS_TYPE_WEB', senderUserId: sub.userId },
        ],
      },
    })
    expect(activity.status).toBe('ACTIVITY_STATUS_COMPLETED')
    const [invitationId] = activity.result.createInvitationsResult!.invitationIds
    expect((await sub.client.getOrganization({ organizationId: sub.organizationId })).organizationData.invitations?.map((i) => i.invitationId)).toEqual([
      invitationId,
    ])
    expect(await harness.kms.outbox()).toEqual([
      {
        to: 'x@blocked.test',
        status: 'failed',
        attempts: 1,
        lastError: "could not send the email: Can't send mail - all recipients were rejected: 550 mailbox unavailable",
      },
    ])
  })
})

describe(SMTP_URL_VARIABLE, () => {
  test('behavior: with no smtp option, the environment variable sends mail by SMTP', async () => {
    const before = process.env[SMTP_URL_VARIABLE]
    process.env[SMTP_URL_VARIABLE] = smtpUrl
    let harness: Awaited<ReturnType<typeof startKms>> | undefined
    try {
      harness = await startKms()
      const sub = await harness.subOrganization()
      await sub.client.createInvitations({
        type: 'ACTIVITY_TYPE_CREATE_INVITATIONS',
        timestampMs: harness.timestampMs(),
        organizationId: sub.organizationId,
        parameters: {
          invitations: [
            {
              receiverUserName: 'grace',
              receiverUserEmail: 'grace@example.test',
              receiverUserTags: [],
              accessType: 'ACCESS_TYPE_ALL',
              senderUserId: sub.userId,
            },
          ],
        },
      })
      const mail = await mailTo('grace@example.test')
      expect([mail.from?.text, mail.subject]).toEqual(['"Latchkey" <no-reply@127.0.0.1>', `root invited you to sub ${sub.keys.apiPublicKey.slice(2, 12)}`])
      expect(mail.text).toMatch(/^root invited you, as grace, to sub [0-9a-f]{10}\.\n\nInvitation: [0-9a-f-]{36}\n?$/)
    } finally {
      if (before === undefined) delete process.env[SMTP_URL_VARIABLE]
      else process.env[SMTP_URL_VARIABLE] = before
      await harness?.kms.stop()
    }
  })
})

describe('requireTLS (production)', () => {
  test('error: over smtp:// to a server that offers no STARTTLS, nothing is sent', async () => {
    const mailer = smtpMailer({ url: smtpUrl, from: 'Latchkey <login@latchkey.test>', requireTLS: true })
    await expect(mailer.send({ to: 'tls-only@example.test', subject: 's', text: 't', html: '<p>t</p>' })).rejects.toThrow(
      'could not send the email: Error upgrading connection with STARTTLS: 500 Error: command not recognized',
    )
    expect(received.filter((mail) => mail.envelopeTo.includes('tls-only@example.test'))).toEqual([])
  })

  test('error: an smtp:// URL that turns TLS off is refused at once', () => {
    expect(() => smtpMailer({ url: `${smtpUrl}?ignoreTLS=true`, requireTLS: true })).toThrow(
      'the SMTP url turns TLS off (ignoreTLS=true or requireTLS=false): mail with sign-in codes must go over TLS; use smtps://…:465, or smtp://…:587 with STARTTLS',
    )
  })
})
