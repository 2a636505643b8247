import { createHash } from 'node:crypto'
import { hexBytes, secret, text } from './settings.js'

/**
 * The audit key's development default: a fixed key, so the keyed hashes of one email stay the
 * same across restarts on a developer's machine. Production refuses it (`--audit-key-file` or
 * LATCHKEY_AUDIT_KEY is required there): anyone who reads this line can test guesses against it.
 */
export const DEVELOPMENT_AUDIT_KEY: Uint8Array = Uint8Array.from(createHash('sha256').update('latchkey development audit key').digest())

/**
 * The settings of the audit trail the kms and the backend keep: the key of the keyed hashes of
 * IPs and emails, and a file to mirror the events to as JSON lines.
 *
 * @example
 * const settings = { ...baseSettings({ port: 8090 }), ...auditSettings() }
 */
export function auditSettings() {
  return {
    auditKey: secret({
      env: 'LATCHKEY_AUDIT_KEY',
      fileFlag: 'audit-key-file',
      production: 'required',
      convert: hexBytes(32),
      description:
        'The 32-byte key (64 hex characters) of the audit trail’s keyed hashes (HMAC-SHA-256) of IPs and emails, which are never stored in clear; keep it to look one person’s events up. Without it: a fixed development key.',
    }),
    auditLogFile: text({
      flag: 'audit-log-file',
      env: 'LATCHKEY_AUDIT_LOG_FILE',
      valueName: '<path>',
      description: 'Also append each audit event, once stored, to this file as a JSON line. Default: the database only.',
    }),
  }
}
