import { generateKeyPairSync, randomBytes } from 'node:crypto'
import { mkdtemp, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { getFreePort } from '@latchkey/devnet'
import { generateApiKeyPair } from '@latchkey/kms'
import { getPublicKey } from '@turnkey/crypto'
import { expect, test } from 'vitest'
import { previousRelease, previousReleaseSource } from '../../../test/previousRelease.js'
import { listening, startCli } from '../../service/test/cliProcess.js'
import { freshDatabaseUrl } from '../../service/test/testDatabase.js'
import { SERVER_MIGRATIONS } from '../src/index.js'
import { sealCode } from './consentFrameCode.js'

// A rolling upgrade of the backend (UPGRADE.md, "How this is tested"): the previous release
// (release/previous.json), run from its own source, and this one serve one PostgreSQL database,
// against the current kms bin. Run by `npm run test:server-postgres` only.

const kmsCli = 'packages/kms/src/cli.ts'
const serverCli = 'packages/server/src/cli.ts'
const origin = 'http://localhost:5173'

type Release = 'previous' | 'current'

test(`behavior: the previous release (${previousRelease.commit.slice(0, 12)}) makes the database and signs a user in; this one migrates it; when every step since is an expansion sign-ins work through both at once and each reads the other's sessions, else the previous refuses it before it listens`, async () => {
  const previousRoot = await previousReleaseSource()
  const directory = await mkdtemp(join(tmpdir(), 'latchkey-server-release-'))
  const secretFile = async (name: string, contents: string) => {
    const path = join(directory, name)
    await writeFile(path, `${contents}\n`, { mode: 0o600 })
    return path
  }

  // The kms, as an operator runs it (the current release: the backends' kms is upgraded apart).
  const signerPrivateKey = generateApiKeyPair().apiPrivateKey
  const signerPublicKey = Buffer.from(getPublicKey(signerPrivateKey, false)).toString('hex')
  const backendKey = generateApiKeyPair()
  const kmsDb = join(directory, 'kms.db')
  const init = startCli(kmsCli, ['init-organization', '--db', kmsDb, '--name', 'Acme', '--public-key', backendKey.apiPublicKey])
  expect((await init.exited).code).toBe(0)
  const { organizationId } = JSON.parse(init.stdout()) as { organizationId: string }
  const kmsPort = await getFreePort()
  await startCli(kmsCli, ['--port', String(kmsPort), '--db', kmsDb], {
    LATCHKEY_KMS_MASTER_KEY: randomBytes(32).toString('hex'),
    LATCHKEY_KMS_SIGNER_KEY: signerPrivateKey,
  }).waitForLog(listening)
  const kmsUrl = `http://127.0.0.1:${kmsPort}`

  // Both releases with the same settings: one database, one API key, one session key.
  const env = { DATABASE_URL: await freshDatabaseUrl() }
  const settings = [
    '--kms-url',
    kmsUrl,
    '--organization-id',
    organizationId,
    '--api-public-key',
    backendKey.apiPublicKey,
    '--api-private-key-file',
    await secretFile('api-key', backendKey.apiPrivateKey),
    '--session-signer-public-key',
    signerPublicKey,
    '--allowed-origin',
    origin,
    '--session-jwt-key-file',
    await secretFile('jwt-key', generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey.export({ format: 'pem', type: 'pkcs8' }).toString()),
    '--session-jwt-issuer',
    'https://api.example',
  ]
  const run = (release: Release, args: string[]) =>
    release === 'previous' ? startCli(join(previousRoot, serverCli), args, env, 'test', previousRoot) : startCli(serverCli, args, env)
  const command = async (release: Release, args: string[]) => {
    const child = run(release, args)
    const { code } = await child.exited
    if (code !== 0) throw new Error(`${release} latchkey-server ${args.join(' ')} exited ${code}: ${child.stderr()}`)
    return JSON.parse(child.stdout())
  }
  const serve = async (release: Release) => {
    const port = await getFreePort()
    await run(release, ['--port', String(port), ...settings]).waitForLog(listening)
    return `http://127.0.0.1:${port}`
  }

  const post = (url: string, json: unknown) =>
    fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', origin }, body: JSON.stringify(json) })
  /** An email sign-in through the backend at `url`: its session cookie. */
  const signIn = async (url: string, email: string) => {
    const start = await post(`${url}/auth/email/start`, { email })
    expect(start.status).toBe(200)
    const { otpId, otpEncryptionTargetBundle } = (await start.json()) as { otpId: string; otpEncryptionTargetBundle: string }
    const inbox = (await (await fetch(`${kmsUrl}/dev/mailbox.json`)).json()) as { messages: { to: string; text: string }[] }
    const code = /sign-in code is (\d{6})\./.exec(inbox.messages.find((message) => message.to === email)!.text)![1]!
    const verify = await post(`${url}/auth/email/verify`, {
      otpId,
      ...(await sealCode({ otpEncryptionTargetBundle, code, key: generateApiKeyPair(), signerPublicKey })),
    })
    expect(verify.status).toBe(200)
    return verify.headers.get('set-cookie')!.split(';')[0]!
  }
  /** The session's email, as the backend at `url` reads it. */
  const sessionEmail = async (url: string, cookie: string) => {
    const answer = await fetch(`${url}/auth/session`, { headers: { cookie, origin } })
    expect(answer.status).toBe(200)
    return ((await answer.json()) as { email: string }).email
  }
  const email = (who: string) => `${who}.${randomBytes(4).toString('hex')}@example.test`

  // The previous release makes the schema and signs a user in.
  const previousUrl = await serve('previous')
  const early = email('early')
  const earlyCookie = await signIn(previousUrl, early)

  // The steps since the previous release, and those among them that are not expansions.
  const since: string[] = (await command('current', ['migrate', 'status'])).pending
  const contractions = SERVER_MIGRATIONS.filter((migration) => since.includes(migration.name) && !migration.expand).map((migration) => migration.name)
  expect(await command('current', ['migrate', 'up'])).toMatchObject({ ran: since, dryRun: false })
  const currentUrl = await serve('current')
  const late = email('late')
  const lateCookie = await signIn(currentUrl, late)
  expect(await sessionEmail(currentUrl, earlyCookie)).toBe(early)

  const status = await command('previous', ['migrate', 'status'])
  expect(status).toMatchObject({ pending: [], newer: since, compatible: contractions.length === 0 })
  if (contractions.length === 0) {
    // Both serve at once: the running previous instance, and a new one of it started on the migrated database.
    const restartedUrl = await serve('previous')
    for (const url of [previousUrl, restartedUrl]) {
      const person = email('previous')
      expect(await sessionEmail(currentUrl, await signIn(url, person))).toBe(person)
      expect(await sessionEmail(url, lateCookie)).toBe(late)
    }
  } else {
    // A contraction: the previous release refuses the database and exits 1 before it listens. It
    // names the first contraction and every step after it (an expansion needs what came before it).
    const refused = run('previous', ['--port', String(await getFreePort()), ...settings])
    expect((await refused.exited).code).toBe(1)
    expect(refused.stderr()).toContain(
      `The database has migration ${since.slice(since.indexOf(contractions[0]!)).join(', ')} of a newer version of server; run that version or a newer one`,
    )
    expect(refused.logs().filter(listening)).toEqual([])
  }
}, 240_000)
