import { randomUUID } from 'node:crypto'
import type { Db } from './db.js'

export type Mail = { to: string; subject: string; text: string; html: string }

/** Where the service's emails go: SMTP in production, the dev inbox locally. */
export type Mailer = { send(mail: Mail): Promise<void> }

/**
 * The dev inbox: mail is kept in the service's database and shown at `/dev/mailbox` (HTML) and
 * `/dev/mailbox.json`, newest first, so a local sign-in needs no mail server.
 *
 * @example
 * const kms = createKms({ mailer: devInbox(db) })
 */
export function devInbox(db: Db, now: () => number = Date.now): Mailer {
  return {
    async send(mail) {
      await db.insertMail({ id: randomUUID(), to_address: mail.to, subject: mail.subject, text: mail.text, html: mail.html, created_at: now() })
    },
  }
}

const escapeHtml = (text: string) => text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`)

/** The dev inbox as a page. */
export async function mailboxPage(db: Db): Promise<string> {
  const rows = (await db.mailbox())
    .map(
      (mail) =>
        `<article><h2>${escapeHtml(mail.subject)}</h2><p class="meta">To ${escapeHtml(mail.to_address)} · ${new Date(mail.created_at).toISOString()}</p><pre>${escapeHtml(mail.text)}</pre></article>`,
    )
    .join('\n')
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Latchkey dev inbox</title>
<style>body{font-family:system-ui,sans-serif;max-width:760px;margin:24px auto;padding:0 16px}article{border:1px solid #ddd;border-radius:10px;padding:12px 16px;margin:12px 0}.meta{color:#666;font-size:13px}pre{white-space:pre-wrap;word-break:break-all}</style>
</head><body><h1>Dev inbox</h1>${rows || '<p>No mail yet.</p>'}</body></html>`
}

/** The dev inbox as JSON. */
export async function mailboxJson(db: Db) {
  return {
    messages: (await db.mailbox()).map((mail) => ({
      id: mail.id,
      to: mail.to_address,
      subject: mail.subject,
      text: mail.text,
      createdAt: new Date(mail.created_at).toISOString(),
    })),
  }
}
