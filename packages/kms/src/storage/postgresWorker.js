// @ts-check
// The thread that holds postgres.ts's one PostgreSQL connection. The service thread posts a
// request and blocks on `signal` until the answer is posted back; requests never overlap.
import { workerData } from 'node:worker_threads'

/** @type {{ url: string; port: import('node:worker_threads').MessagePort; signal: Int32Array }} */
const { url, port, signal } = workerData

/** @param {unknown} answer */
function answer(answer) {
  port.postMessage(answer)
  Atomics.store(signal, 0, 1)
  Atomics.notify(signal, 0)
}

/** @param {unknown} error */
const failure = (error) => {
  const { message, code, detail } = /** @type {{ message?: string; code?: string; detail?: string }} */ (error ?? {})
  return { error: { message: message ?? String(error), code, detail } }
}

try {
  const { default: pg } = await import('pg')
  const INT8 = 20
  const client = new pg.Client({
    connectionString: url,
    connectionTimeoutMillis: 10_000,
    // bigint columns hold unix ms and counters: numbers, as SQLite returns them.
    types: { getTypeParser: (oid, format) => (oid === INT8 ? Number : pg.types.getTypeParser(oid, format)) },
  })
  // A lost connection fails the next query; this keeps the error from ending the thread first.
  client.on('error', () => {})
  port.on('message', async (request) => {
    try {
      if (request.type === 'connect') {
        await client.connect()
        answer({ rows: [] })
      } else if (request.type === 'query') {
        const result = await client.query({ name: request.name, text: request.sql, values: request.parameters })
        // Every table has an identity column `rowid` for insertion order, which SQLite's rows do not show.
        for (const row of result.rows) delete row.rowid
        answer({ rows: result.rows })
      } else if (request.type === 'exec') {
        await client.query(request.sql)
        answer({ rows: [] })
      } else if (request.type === 'close') {
        await client.end()
        answer({ rows: [] })
        port.close()
      }
    } catch (error) {
      answer(failure(error))
    }
  })
} catch (error) {
  // pg could not load: answer the first request with why.
  port.once('message', () => answer(failure(error)))
}
