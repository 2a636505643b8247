import type { Logger } from '@latchkey/service'
import { type AuditTrail, type AuditVerification, createAuditTrail, verifyAuditTrail } from '@latchkey/service/database'
import type { Store } from './store.js'

export type ServerAuditOptions = {
  /** 32 bytes: the key of the keyed hashes of IPs and emails. Default: the fixed development key. */
  key?: Uint8Array | undefined
  /** Also append each event, once stored, to this file as a JSON line. */
  logFile?: string | undefined
  /** Where events that could not be stored are reported. Default: the console. */
  logger?: Logger | undefined
  now?: (() => number) | undefined
}

/**
 * The backend's audit trail (`server_audit_events`, hash-chained: @latchkey/service/database's
 * audit.ts) in its store; every instance on one PostgreSQL database appends to the same chain.
 *
 * @example
 * const audit = createServerAudit(store, { key: auditKey, logFile: '/var/log/latchkey/audit.jsonl' })
 */
export function createServerAudit(store: Store, options: ServerAuditOptions = {}): AuditTrail {
  const { database } = store
  return createAuditTrail({
    service: 'server',
    storage: {
      dialect: database.dialect,
      transaction: (work) => database.transaction(work, { isolation: 'read committed' }),
      connection: (work) => database.db.connection().execute(work),
      groupCommit: database.immediate?.groupCommit,
    },
    key: options.key,
    logFile: options.logFile,
    now: options.now,
    logger: options.logger,
  })
}

/**
 * Walks the backend's audit chain (`latchkey-server audit verify`): intact with its count, or the
 * first row whose sequence, link or hash does not match.
 *
 * @example
 * const verdict = await verifyServerAudit(store)
 */
export const verifyServerAudit = (store: Store): Promise<AuditVerification> => verifyAuditTrail(store.database.db, 'server')
