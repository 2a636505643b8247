import { randomBytes } from 'node:crypto'
import { mkdtemp, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { getFreePort } from '@latchkey/devnet'
import { ApiKeyStamper } from '@turnkey/api-key-stamper'
import { TurnkeyClient } from '@turnkey/http'
import { sql } from 'kysely'
import { afterEach, describe, expect, test } from 'vitest'
import { createKms, type Kms } from '../src/index.js'
import { envKek } from '../src/keyring/kek.js'
import { rewrapRows, rotateDataKey, rotateKek, verifySealedRows } from '../src/keyring/operations.js'
import { loadPkcs11Module, parsePkcs11Uri, pkcs11Kek } from '../src/keyring/pkcs11.js'
import { seal } from '../src/secrets.js'
import { SEALED_COLUMNS } from '../src/storage/dataKeys.js'
import { connect, testDatabase } from './database.js'
import { startKms } from './harness.js'
import { softHsmKek } from './softhsm.js'

// The key hierarchy: data keys seal the rows, a KEK (the master key, or a key in SoftHSM2) wraps
// the data keys; rotation and rewrap online, and the rows the kms sealed before data keys.

const stops: (() => Promise<void>)[] = []
afterEach(async () => {
  for (const stop of stops.splice(0).reverse()) await stop()
})

async function started(options: Parameters<typeof startKms>[0]) {
  const harness = await startKms(options)
  stops.push(() => harness.kms.stop())
  return harness
}

/** Every sealed value of the database, as `table:key → sealed`. */
async function sealedValues(kms: Kms) {
  const values: Record<string, string> = {}
  for (const column of SEALED_COLUMNS) {
    let after = ''
    for (;;) {
      const rows = await kms.db.sealedRows(column, { after, limit: 1000 })
      if (!rows.length) break
      for (const row of rows) values[`${column.table}:${row.key}`] = row.sealed
      after = rows[rows.length - 1]!.key
    }
  }
  return values
}

async function sign(
  harness: Awaited<ReturnType<typeof startKms>>,
  sub: { keys: { apiPublicKey: string; apiPrivateKey: string }; organizationId: string; address: string },
) {
  const client = new TurnkeyClient({ baseUrl: harness.kms.url }, new ApiKeyStamper(sub.keys))
  const { activity } = await client.signRawPayload({
    type: 'ACTIVITY_TYPE_SIGN_RAW_PAYLOAD_V2',
    timestampMs: harness.timestampMs(),
    organizationId: sub.organizationId,
    parameters: { signWith: sub.address, payload: `0x19${'ab'.repeat(32)}`, encoding: 'PAYLOAD_ENCODING_HEXADECIMAL', hashFunction: 'HASH_FUNCTION_KECCAK256' },
  })
  return activity.result.signRawPayloadResult!
}

describe('key hierarchy', () => {
  test('default: rows are sealed by the first data key, which the master key wraps; the sealed text names the data key', async () => {
    const masterKey = randomBytes(32)
    const harness = await started({ masterKey })
    await harness.subOrganization()
    const values = Object.values(await sealedValues(harness.kms))
    expect(values.length).toBeGreaterThan(0)
    for (const value of values) expect(value).toMatch(/^v2:dek_initial:[A-Za-z0-9+/]+=*$/)
    expect(await harness.kms.db.dataKeys()).toEqual([{ id: 'dek_initial', kek_id: envKek(masterKey).id, wrapped: expect.any(String), created_at: 0 }])
  })

  test('behavior: a database whose rows the old code sealed with the master key (v1) opens and signs; keys rewrap moves them to the data key', async () => {
    const masterKey = randomBytes(32)
    const database = await testDatabase(join(await mkdtemp(join(tmpdir(), 'latchkey-keys-')), 'kms.db'))
    const first = await startKms({ masterKey, ...database })
    const sub = await first.subOrganization()
    const before = await sign(first, sub)
    // As the kms before data keys left it: every row sealed by the master key itself (`v1:`), no data keys.
    const plain = Object.entries(await sealedValues(first.kms)).map(([where, sealed]) => {
      const [table, key] = where.split(':') as [string, string]
      const column = SEALED_COLUMNS.find((candidate) => candidate.table === table)!
      return { column, key, plaintext: first.kms.keyring.openBytes(column.record(key), sealed) }
    })
    await first.kms.stop()
    const surgery = connect(database)
    for (const { column, key, plaintext } of plain)
      await sql`update ${sql.table(column.table)} set ${sql.ref(column.column)} = ${seal(masterKey, column.record(key), plaintext)} where ${sql.ref(column.key)} = ${key}`.execute(
        surgery.kysely,
      )
    await sql`delete from data_keys`.execute(surgery.kysely)
    await surgery.close()

    const kms = createKms({ port: await getFreePort(), masterKey, ...database })
    stops.push(() => kms.stop())
    await kms.start()
    const again = { ...first, kms }
    expect(await sign(again, sub)).toEqual(before)
    expect(Object.values(await sealedValues(kms)).every((value) => value.startsWith('v1:'))).toBe(true)
    expect(await rewrapRows(kms.db, kms.keyring, { batchSize: 2 })).toEqual({ dataKey: 'dek_initial', moved: plain.length, left: 0 })
    expect(Object.values(await sealedValues(kms)).every((value) => value.startsWith('v2:dek_initial:'))).toBe(true)
    expect(await sign(again, sub)).toEqual(before)
  })

  test('behavior: keys rotate, then a rewrap cut short after its first batch resumes when run again; every row ends on the new data key and signs', async () => {
    const harness = await started({ masterKey: randomBytes(32), keyRefreshMs: 50 })
    const subs = [await harness.subOrganization(), await harness.subOrganization(), await harness.subOrganization()]
    const before = await Promise.all(subs.map((sub) => sign(harness, sub)))
    const { dataKey } = await rotateDataKey(harness.kms.db, harness.kms.keyring)
    const cut = rewrapRows(harness.kms.db, harness.kms.keyring, {
      batchSize: 1,
      onBatch: () => {
        throw new Error('cut')
      },
    })
    await expect(cut).rejects.toThrow('cut')
    const midway = Object.values(await sealedValues(harness.kms))
    expect(midway.filter((value) => value.startsWith(`v2:${dataKey}:`))).toHaveLength(1)
    const resumed = await rewrapRows(harness.kms.db, harness.kms.keyring, { batchSize: 1 })
    expect(resumed).toEqual({ dataKey, moved: midway.length - 1, left: 0 })
    expect(Object.values(await sealedValues(harness.kms)).every((value) => value.startsWith(`v2:${dataKey}:`))).toBe(true)
    expect(await Promise.all(subs.map((sub) => sign(harness, sub)))).toEqual(before)
  })

  test('behavior: a rewrap while the kms signs: every signature succeeds', async () => {
    const harness = await started({ masterKey: randomBytes(32), keyRefreshMs: 50 })
    const subs = [await harness.subOrganization(), await harness.subOrganization()]
    await rotateDataKey(harness.kms.db, harness.kms.keyring)
    let rewrapping = true
    const rewrap = rewrapRows(harness.kms.db, harness.kms.keyring, { batchSize: 1 }).finally(() => {
      rewrapping = false
    })
    const results: PromiseSettledResult<unknown>[] = []
    do results.push(...(await Promise.allSettled(subs.map((sub) => sign(harness, sub)))))
    while (rewrapping)
    expect((await rewrap).left).toBe(0)
    expect(results.filter((result) => result.status === 'rejected')).toEqual([])
  })

  test('error: a master key that does not wrap the stored data keys refuses to start and never listens', async () => {
    const database = await testDatabase(join(await mkdtemp(join(tmpdir(), 'latchkey-keys-')), 'kms.db'))
    const [key, wrong] = [randomBytes(32), randomBytes(32)]
    const first = createKms({ port: await getFreePort(), masterKey: key, ...database })
    await first.start()
    await first.stop()
    const other = createKms({ port: await getFreePort(), masterKey: wrong, ...database })
    stops.push(() => other.stop())
    await expect(other.start()).rejects.toThrow(`no data key is wrapped by this KEK (${envKek(wrong).id}): stored keys are wrapped by ${envKek(key).id}`)
    expect(await fetch(`${other.url}/readyz`).catch(() => 'not listening')).toBe('not listening')
  })
})

describe('key hierarchy with a KEK in SoftHSM2', () => {
  test('behavior: the data keys are wrapped in the token; the kms restarts on them and signs; rotate-kek from the master key moves them into the HSM', async () => {
    const hsm = await softHsmKek()
    const masterKey = randomBytes(32)
    const database = await testDatabase(join(await mkdtemp(join(tmpdir(), 'latchkey-keys-')), 'kms.db'))
    const first = await startKms({ masterKey, ...database })
    const sub = await first.subOrganization()
    const before = await sign(first, sub)
    const kek = await pkcs11Kek(parsePkcs11Uri(hsm.uri()))
    expect(await rotateKek(first.kms.db, first.kms.keyring, kek)).toEqual({
      from: envKek(masterKey).id,
      to: 'pkcs11:token=latchkey;object=kek',
      rewrapped: ['dek_initial'],
      stranded: [],
    })
    await first.kms.stop()
    // The master key is gone: only the token unwraps the data keys now.
    const kms = createKms({ port: await getFreePort(), kek, ...database })
    stops.push(() => kms.stop())
    await kms.start()
    expect(await sign({ ...first, kms }, sub)).toEqual(before)
    expect((await fetch(`${kms.url}/readyz`)).status).toBe(200)
    expect(await verifySealedRows(kms.db, kms.keyring)).toEqual({ intact: true, opened: expect.any(Number) })
  })

  test('error: a token that goes away mid-run: /readyz answers 503, a row under a data key it can no longer unwrap answers 503, never a 500; signing with the keys it holds goes on', async () => {
    const hsm = await softHsmKek({ token: 'vanishing' })
    const database = await testDatabase(join(await mkdtemp(join(tmpdir(), 'latchkey-keys-')), 'kms.db'))
    const kek = await pkcs11Kek(parsePkcs11Uri(hsm.uri()))
    const harness = await started({ kek, keyRefreshMs: 50, ...database })
    const sub = await harness.subOrganization()
    const before = await sign(harness, sub)
    // A data key another instance makes while the token still answers: this instance has not unwrapped it.
    const other = await pkcs11Kek(parsePkcs11Uri(hsm.uri()))
    stops.push(() => other.close())
    const wrapped = Buffer.from(await other.wrap('dek_later', randomBytes(32))).toString('base64')

    // The token goes away: every session on its slot is closed, as when the HSM restarts or is unplugged.
    const { module, release } = await loadPkcs11Module(hsm.module)
    try {
      const slot = module.C_GetSlotList(true).find((candidate) => module.C_GetTokenInfo(candidate).label.trim() === 'vanishing')!
      module.C_CloseAllSessions(slot)
    } finally {
      release()
    }
    const ready = await fetch(`${harness.kms.url}/readyz`)
    expect(ready.status).toBe(503)
    expect(await ready.json()).toEqual({ status: 'unavailable', reason: expect.stringContaining('the PKCS#11 token "vanishing" does not answer') })
    expect(await sign(harness, sub)).toEqual(before)

    await harness.kms.db.insertDataKey({ id: 'dek_later', kek_id: kek.id, wrapped, created_at: 0 })
    const sealedUnder = harness.kms.keyring.seal('probe', 'x').replace(/^v2:[^:]+:/, 'v2:dek_later:')
    let refused: unknown
    try {
      harness.kms.keyring.openBytes('probe', sealedUnder)
    } catch (error) {
      refused = error
    }
    expect(refused).toMatchObject({ status: 503, message: 'data key dek_later is not loaded yet: try again' })
    await expect(harness.kms.keyring.refresh()).rejects.toThrow()
    expect((await fetch(`${harness.kms.url}/readyz`)).status).toBe(503)
  })

  test('error: a wrong PIN, a missing token, a missing key and a malformed URI are refused in one line each', async () => {
    const hsm = await softHsmKek({ token: 'refusals' })
    const wrongPin = join(hsm.directory, 'wrong-pin')
    await writeFile(wrongPin, '9999\n')
    await expect(pkcs11Kek(parsePkcs11Uri(hsm.uri(wrongPin)))).rejects.toThrow('the PIN for PKCS#11 token "refusals" is wrong')
    await expect(pkcs11Kek(parsePkcs11Uri(hsm.uri(hsm.pinFile, 'absent')))).rejects.toThrow(`the PKCS#11 token "absent" is not present in ${hsm.module}`)
    await expect(pkcs11Kek(parsePkcs11Uri(hsm.uri().replace('object=kek', 'object=other')))).rejects.toThrow(
      'no secret key is labelled "other" on PKCS#11 token "refusals"',
    )
    expect(() => parsePkcs11Uri('pkcs11:token=latchkey;object=kek?module-path=/x.so&pin-value=1234')).toThrow(
      '--kek is not a usable PKCS#11 URI (pin-value puts the PIN in the settings: use pin-source=file:<path>): expected pkcs11:token=…;object=…?module-path=…&pin-source=file:…',
    )
    expect(() => parsePkcs11Uri('pkcs11:token=latchkey?module-path=/x.so&pin-source=file:/p')).toThrow('(object is missing)')
  })
})
