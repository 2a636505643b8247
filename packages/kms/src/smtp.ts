import { GrpcCode, KmsError } from './errors.js'
import type { Mailer } from './mail.js'

/** Where mail goes out: an SMTP server's URL and the sender. */
export type SmtpOptions = {
  /**
   * `smtp://user:password@host:587` (STARTTLS when offered), `smtps://…:465` (TLS from the start);
   * nodemailer options may follow as query parameters, e.g. `?requireTLS=true`.
   */
  url: string
  /** The From header. Default `Latchkey <no-reply@{host of url}>`. */
  from?: string | undefined
  /**
   * Send over smtp:// only once the server has upgraded the connection with STARTTLS, so a network
   * attacker cannot strip it and read the codes (security review L7); an smtp:// URL that turns TLS
   * off (`ignoreTLS=true`, `requireTLS=false`) is refused. smtps:// is TLS from the start either
   * way. Default false; `latchkey-kms` sets it in production.
   */
  requireTLS?: boolean | undefined
}

/** The environment variable `createKms` reads when no `smtp` option is given. */
export const SMTP_URL_VARIABLE = 'LATCHKEY_SMTP_URL'

/** Why `url` cannot carry mail over TLS, or undefined: an smtp:// URL whose query turns TLS off. */
export function smtpWithoutTls(url: URL): string | undefined {
  if (url.protocol !== 'smtp:') return undefined
  if (url.searchParams.get('ignoreTLS') === 'true' || url.searchParams.get('requireTLS') === 'false')
    return 'the SMTP url turns TLS off (ignoreTLS=true or requireTLS=false): mail with sign-in codes must go over TLS; use smtps://…:465, or smtp://…:587 with STARTTLS'
  return undefined
}

/**
 * A mailer that sends through an SMTP server (nodemailer, loaded on the first message). It is the
 * outbox's sender: a message the server does not take now is tried again later; one it refuses
 * for good (5xx) is not.
 *
 * @example
 * const kms = createKms({ mailer: smtpMailer({ url: 'smtp://mail.example.com:587', from: 'My app <login@example.com>' }) })
 */
export function smtpMailer(options: SmtpOptions): Mailer {
  let url: URL
  try {
    url = new URL(options.url)
  } catch {
    throw new Error(`the SMTP url is not a URL: ${options.url.replace(/\/\/[^@/]*@/, '//…@')}`)
  }
  if (url.protocol !== 'smtp:' && url.protocol !== 'smtps:') throw new Error(`the SMTP url must start with smtp:// or smtps://, not ${url.protocol}//`)
  if (options.requireTLS) {
    const problem = smtpWithoutTls(url)
    if (problem) throw new Error(problem)
    if (url.protocol === 'smtp:') url.searchParams.set('requireTLS', 'true')
  }
  const transportUrl = url.href
  const from = options.from ?? `Latchkey <no-reply@${url.hostname}>`
  let transport: Promise<import('nodemailer').Transporter> | undefined
  return {
    async send(mail) {
      transport ??= import('nodemailer').then((nodemailer) => nodemailer.createTransport(transportUrl))
      try {
        await (await transport).sendMail({ from, to: mail.to, subject: mail.subject, text: mail.text, html: mail.html })
      } catch (error) {
        // The cause keeps the server's reply code: the outbox gives up on a 5xx, retries the rest.
        throw Object.assign(new KmsError(GrpcCode.unavailable, `could not send the email: ${(error as Error).message}`), { cause: error })
      }
    },
  }
}
