import { createHash } from 'node:crypto'
import type { AuditVerification } from './database/audit.js'
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

/**
 * The `audit verify` command of the kms's and the backend's CLIs: `verify` opens the service's
 * store, walks its chain and closes it; the command prints the count and head hash when the chain
 * is whole, and exits 1 naming the first altered row when it is not.
 *
 * @example
 * commands: { 'audit verify': auditVerifyCommand(storeSettings, async (values) => verifyIn(await open(values))) }
 */
export function auditVerifyCommand<settings, values>(settings: settings, verify: (values: values) => Promise<AuditVerification>) {
  return {
    summary:
      'Walk the audit trail from its first event: prints the count when every event links to the one before and matches its hash; exits 1 naming the first altered row.',
    settings,
    async run(values: values) {
      const verdict = await verify(values)
      if (!verdict.intact) throw new Error(`the audit trail is altered at row ${verdict.seq}: ${verdict.problem} (${verdict.count} rows before it are intact)`)
      return { intact: true, count: verdict.count, headHash: verdict.headHash }
    },
  }
}
