/**
 * The floor of `bench:kms`: what a stamped, stored and audited signature costs in this stack when
 * nothing else is done, measured under the same client as the kms so that the kms's own logic
 * (authentication, the permission model, the rate limit, idempotency, the Turnkey envelope) can be
 * told apart from what no implementation on Node and SQLite can avoid.
 *
 * Per request: Node's HTTP server reads the body; the kms's own stamp check (`verifyApiKeyStamp`,
 * OpenSSL P-256) verifies it; the payload is hashed (keccak-256) and signed by noble's secp256k1
 * with the base table the kms signs with (low S, recovery bit); an activity row and a hash-chained
 * audit row are written, every request of one turn of the event loop in one SQLite transaction
 * (WAL), as the kms's group commit writes them; the activity is answered as JSON once committed.
 * Nothing is looked up: no key, organization, policy, grant, rate limit or earlier activity.
 */
import { createHash, randomUUID } from 'node:crypto'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { verifyApiKeyStamp } from '@latchkey/kms'
import { secp256k1 } from '@noble/curves/secp256k1'
import BetterSqlite3 from 'better-sqlite3'
import { hexToBytes, keccak256 } from 'viem'

/** The rows every stored, audited activity writes at least (the kms's columns, fewer indexes). */
const SCHEMA = `
  create table activities (id text primary key, organization_id text not null, fingerprint text not null unique, type text not null,
    status text not null, intent text not null, result text, created_at integer not null, updated_at integer not null);
  create table audit_events (seq integer primary key, at integer not null, actor_organization text, credential text, action text not null,
    target text, outcome text not null, prev_hash text not null, hash text not null);
`

/**
 * Serves `POST /public/v1/submit/sign_raw_payload` as the floor, storing into the SQLite file at
 * `path`; answers the URL and a stop.
 *
 * @example
 * const floor = await startFloor(join(dir, 'floor.db'))
 * // … the load client against floor.url …
 * await floor.stop()
 */
export async function startFloor(path: string): Promise<{ url: string; stop(): Promise<void> }> {
  const file = new BetterSqlite3(path)
  file.pragma('journal_mode = WAL')
  file.exec(SCHEMA)
  const statements = {
    begin: file.prepare('begin immediate'),
    commit: file.prepare('commit'),
    activity: file.prepare('insert into activities values (?, ?, ?, ?, ?, ?, ?, ?, ?)'),
    head: file.prepare('select seq, hash from audit_events order by seq desc limit 1'),
    audit: file.prepare('insert into audit_events values (?, ?, ?, ?, ?, ?, ?, ?, ?)'),
  }
  // The kms signs with a 10-bit base table on the process's one noble instance; so does the floor.
  secp256k1.utils.precompute(10)
  const signingKey = secp256k1.utils.randomPrivateKey()

  type Write = { row: unknown[]; audit: { organization: string; credential: string; action: string; target: string }; done: () => void }
  let turn: Write[] = []
  const commitTurn = () => {
    const writes = turn
    turn = []
    statements.begin.run()
    let head = statements.head.get() as { seq: number; hash: string } | undefined
    for (const { row, audit } of writes) {
      statements.activity.run(row)
      const at = Date.now()
      const seq = (head?.seq ?? 0) + 1
      const prevHash = head?.hash ?? '0'.repeat(64)
      const fields = [seq, at, audit.organization, audit.credential, audit.action, audit.target, 'completed']
      const hash = createHash('sha256')
        .update(`${prevHash}\n${JSON.stringify(fields)}`)
        .digest('hex')
      statements.audit.run([...fields, prevHash, hash])
      head = { seq, hash }
    }
    statements.commit.run()
    for (const { done } of writes) done()
  }

  const server = createServer((request, response) => {
    const chunks: Buffer[] = []
    request.on('data', (chunk: Buffer) => chunks.push(chunk))
    request.on('end', () => {
      const body = Buffer.concat(chunks)
      let publicKey: string
      try {
        publicKey = verifyApiKeyStamp(String(request.headers['x-stamp']), body).publicKey
      } catch (error) {
        response.writeHead(401, { 'content-type': 'text/plain' }).end((error as Error).message)
        return
      }
      const submitted = JSON.parse(body.toString('utf8')) as { type: string; organizationId: string; parameters: { payload: `0x${string}` } }
      const { r, s, recovery } = secp256k1.sign(hexToBytes(keccak256(submitted.parameters.payload)), signingKey, { lowS: true })
      const result = { signRawPayloadResult: { r: r.toString(16).padStart(64, '0'), s: s.toString(16).padStart(64, '0'), v: recovery ? '01' : '00' } }
      const id = randomUUID()
      const now = Date.now()
      const fingerprint = createHash('sha256').update(body).digest('hex')
      if (turn.length === 0) setImmediate(commitTurn)
      turn.push({
        row: [
          id,
          submitted.organizationId,
          fingerprint,
          submitted.type,
          'ACTIVITY_STATUS_COMPLETED',
          JSON.stringify(submitted.parameters),
          JSON.stringify(result),
          now,
          now,
        ],
        audit: { organization: submitted.organizationId, credential: publicKey, action: submitted.type, target: JSON.stringify({ activity: id }) },
        done() {
          const answer = Buffer.from(
            JSON.stringify({
              activity: {
                id,
                organizationId: submitted.organizationId,
                status: 'ACTIVITY_STATUS_COMPLETED',
                type: submitted.type,
                intent: { signRawPayloadIntentV2: submitted.parameters },
                result,
                fingerprint,
                createdAt: { seconds: String(Math.floor(now / 1000)), nanos: '0' },
                updatedAt: { seconds: String(Math.floor(now / 1000)), nanos: '0' },
              },
            }),
          )
          response.writeHead(200, { 'content-type': 'application/json', 'content-length': answer.length }).end(answer)
        },
      })
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    async stop() {
      server.closeAllConnections()
      await new Promise<void>((resolve, reject) => server.close((error) => (error ? reject(error) : resolve())))
      file.close()
    },
  }
}
