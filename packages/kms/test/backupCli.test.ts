import { randomBytes } from 'node:crypto'
import { existsSync } from 'node:fs'
import { mkdtemp, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { getFreePort } from '@latchkey/devnet'
import BetterSqlite3 from 'better-sqlite3'
import { describe, expect, test } from 'vitest'
import { startCli } from '../../service/test/cliProcess.js'
import { startKms } from './harness.js'
import { softHsmKek } from './softhsm.js'

// latchkey-kms backup and verify-backup on a SQLite store while the kms writes, and the KEK
// settings refused before anything listens (exit 2, one line).

const cli = 'packages/kms/src/cli.ts'
// Each case runs the bin several times: a start of `node --import tsx` takes seconds on a loaded machine.
const CLI_TIMEOUT = 120_000
const directory = () => mkdtemp(join(tmpdir(), 'latchkey-kms-backup-'))

async function command(args: string[], env: Record<string, string> = {}) {
  const run = startCli(cli, args, env)
  const { code } = await run.exited
  return { code, stdout: run.stdout(), stderr: run.stderr() }
}

const keyFile = async (key: Uint8Array) => {
  const path = join(await directory(), 'master-key')
  await writeFile(path, Buffer.from(key).toString('hex'), { mode: 0o600 })
  return path
}

describe('latchkey-kms backup', () => {
  test(
    'behavior: a backup taken while the kms writes opens every sealed row with the key; a damaged row is named',
    async () => {
      const masterKey = randomBytes(32)
      const path = join(await directory(), 'kms.db')
      // A SQLite file in every run (the PostgreSQL run too): backup copies SQLite stores.
      const harness = await startKms({ masterKey, databasePath: path, databaseUrl: undefined })
      try {
        await harness.subOrganization()
        let writing = true
        const writes = (async () => {
          let made = 0
          while (writing) {
            await harness.subOrganization()
            made++
          }
          return made
        })()
        const to = join(await directory(), 'backup.db')
        const backup = await command(['backup', '--db', path, '--master-key-file', await keyFile(masterKey), '--to', to])
        writing = false
        expect(await writes).toBeGreaterThanOrEqual(0)
        expect([backup.code, backup.stderr]).toEqual([0, ''])
        expect(JSON.parse(backup.stdout)).toEqual({ backup: to, pages: expect.any(Number) })

        const verified = await command(['verify-backup', to, '--master-key-file', await keyFile(masterKey)])
        expect([verified.code, verified.stderr]).toEqual([0, ''])
        const { opened } = JSON.parse(verified.stdout) as { opened: number }
        expect(opened).toBeGreaterThanOrEqual(2)

        const damaged = new BetterSqlite3(to)
        const wallet = damaged.prepare('select id from wallets order by id limit 1').get() as { id: string }
        damaged.prepare('update wallets set sealed_mnemonic = ? where id = ?').run('v2:dek_initial:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA', wallet.id)
        damaged.close()
        const refused = await command(['verify-backup', to, '--master-key-file', await keyFile(masterKey)])
        expect([refused.code, refused.stdout]).toEqual([1, ''])
        expect(refused.stderr).toBe(
          `latchkey-kms: row ${wallet.id} of wallets.sealed_mnemonic does not open: stored key material does not open with this master key (0 rows before it opened)\n`,
        )
      } finally {
        await harness.kms.stop()
      }
    },
    CLI_TIMEOUT,
  )

  test(
    'error: a backup or verify-backup without the key exits 2 with one line and writes nothing',
    async () => {
      const path = join(await directory(), 'kms.db')
      const harness = await startKms({ masterKey: randomBytes(32), databasePath: path, databaseUrl: undefined })
      await harness.kms.stop()
      const to = join(await directory(), 'backup.db')
      const backup = await command(['backup', '--db', path, '--to', to])
      expect([backup.code, backup.stdout, backup.stderr]).toEqual([
        2,
        '',
        'latchkey-kms: the data keys are wrapped by the master key (--kek env), which is not configured: set LATCHKEY_KMS_MASTER_KEY or --master-key-file / LATCHKEY_KMS_MASTER_KEY_FILE\n',
      ])
      expect(existsSync(to)).toBe(false)
      const verify = await command(['verify-backup', path])
      expect([verify.code, verify.stderr]).toEqual([
        2,
        'latchkey-kms: the data keys are wrapped by the master key (--kek env), which is not configured: set LATCHKEY_KMS_MASTER_KEY or --master-key-file / LATCHKEY_KMS_MASTER_KEY_FILE\n',
      ])
    },
    CLI_TIMEOUT,
  )

  test(
    'error: the kms with a wrong PIN, a missing token or a malformed --kek exits 2 with one line, before it listens',
    async () => {
      const hsm = await softHsmKek({ token: 'cli' })
      const wrongPin = join(hsm.directory, 'wrong-pin')
      await writeFile(wrongPin, '0000\n')
      const db = join(await directory(), 'kms.db')
      const port = String(await getFreePort())
      const serve = (kek: string) => command(['--db', db, '--kek', kek, '--port', port], hsm.env)
      expect(await serve(hsm.uri(wrongPin))).toEqual({ code: 2, stdout: '', stderr: 'latchkey-kms: the PIN for PKCS#11 token "cli" is wrong\n' })
      expect(await serve(hsm.uri(hsm.pinFile, 'gone'))).toEqual({
        code: 2,
        stdout: '',
        stderr: `latchkey-kms: the PKCS#11 token "gone" is not present in ${hsm.module}\n`,
      })
      expect(await serve('pkcs11:token=cli')).toEqual({
        code: 2,
        stdout: '',
        stderr:
          'latchkey-kms: --kek is not a usable PKCS#11 URI (pin-source is missing): expected pkcs11:token=…;object=…?module-path=…&pin-source=file:… (see latchkey-kms --help)\n',
      })
    },
    CLI_TIMEOUT,
  )
})
