import { randomBytes } from 'node:crypto'
import { join } from 'node:path'
import { getFreePort } from '@latchkey/devnet'
import { ApiKeyStamper } from '@turnkey/api-key-stamper'
import { TurnkeyClient } from '@turnkey/http'
import { type Hex, keccak256, recoverAddress, serializeSignature, toHex } from 'viem'
import { expect, test } from 'vitest'
import { previousRelease, previousReleaseSource } from '../../../test/previousRelease.js'
import { listening, startCli } from '../../service/test/cliProcess.js'
import { generateApiKeyPair } from '../src/index.js'
import { KMS_MIGRATIONS } from '../src/storage/migrations.js'
import { testDatabase } from './database.js'
import { ethereumAccount } from './harness.js'

// A rolling upgrade of the kms (UPGRADE.md, "How this is tested"): the previous release
// (release/previous.json), run from its own source, and this one serve one PostgreSQL database.
// Run by `npm run test:kms-postgres` only (vitest.postgres.config.ts includes *.postgres.ts).

const cli = 'packages/kms/src/cli.ts'

type Release = 'previous' | 'current'

test(`behavior: the previous release (${previousRelease.commit.slice(0, 12)}) makes the database and a wallet; this one migrates it; when every step since is an expansion both serve it at once, each signing with the other's wallet, else the previous refuses it before it listens`, async () => {
  const previousRoot = await previousReleaseSource()
  const { databaseUrl } = (await testDatabase()) as { databaseUrl: string }
  // One deployment: one database, one master key, one signer key.
  const env = {
    DATABASE_URL: databaseUrl,
    LATCHKEY_KMS_MASTER_KEY: randomBytes(32).toString('hex'),
    LATCHKEY_KMS_SIGNER_KEY: generateApiKeyPair().apiPrivateKey,
  }
  const run = (release: Release, args: string[]) =>
    release === 'previous' ? startCli(join(previousRoot, cli), args, env, 'test', previousRoot) : startCli(cli, args, env)
  const command = async (release: Release, args: string[]) => {
    const child = run(release, args)
    const { code } = await child.exited
    if (code !== 0) throw new Error(`${release} latchkey-kms ${args.join(' ')} exited ${code}: ${child.stderr()}`)
    return JSON.parse(child.stdout())
  }
  const serve = async (release: Release) => {
    const port = await getFreePort()
    await run(release, ['--port', String(port)]).waitForLog(listening)
    return `http://127.0.0.1:${port}`
  }

  // The previous release makes the schema, the backend's organization, and a wallet.
  const parentKey = generateApiKeyPair()
  const { organizationId } = await command('previous', ['init-organization', '--name', 'App', '--public-key', parentKey.apiPublicKey])
  const previousUrl = await serve('previous')
  const client = (url: string) => new TurnkeyClient({ baseUrl: url }, new ApiKeyStamper(parentKey))
  const createWallet = async (url: string, walletName: string) => {
    const { activity } = await client(url).createWallet({
      type: 'ACTIVITY_TYPE_CREATE_WALLET',
      timestampMs: String(Date.now()),
      organizationId,
      parameters: { walletName, accounts: [ethereumAccount] },
    })
    return activity.result.createWalletResult!.addresses[0] as Hex
  }
  /** The address whose key signed `message` through the kms at `url` with `signWith`. */
  const signer = async (url: string, signWith: Hex, message: string) => {
    const payload = toHex(message)
    const { activity } = await client(url).signRawPayload({
      type: 'ACTIVITY_TYPE_SIGN_RAW_PAYLOAD_V2',
      timestampMs: String(Date.now()),
      organizationId,
      parameters: { signWith, payload, encoding: 'PAYLOAD_ENCODING_HEXADECIMAL', hashFunction: 'HASH_FUNCTION_KECCAK256' },
    })
    const { r, s, v } = activity.result.signRawPayloadResult!
    return recoverAddress({ hash: keccak256(payload), signature: serializeSignature({ r: `0x${r}`, s: `0x${s}`, yParity: Number(v) }) })
  }
  const previousWallet = await createWallet(previousUrl, 'made by the previous release')

  // The steps since the previous release, and those among them that are not expansions.
  const since: string[] = (await command('current', ['migrate', 'status'])).pending
  const contractions = KMS_MIGRATIONS.filter((migration) => since.includes(migration.name) && !migration.expand).map((migration) => migration.name)
  expect(await command('current', ['migrate', 'up'])).toMatchObject({ ran: since, dryRun: false })
  const currentUrl = await serve('current')
  expect(await signer(currentUrl, previousWallet, 'the current release signs')).toBe(previousWallet)

  const status = await command('previous', ['migrate', 'status'])
  expect(status).toMatchObject({ pending: [], newer: since, compatible: contractions.length === 0 })
  if (contractions.length === 0) {
    // Both serve at once: the running previous instance, and a new one of it started on the migrated database.
    const currentWallet = await createWallet(currentUrl, 'made by the current release')
    const restartedUrl = await serve('previous')
    for (const url of [previousUrl, restartedUrl]) expect(await signer(url, currentWallet, 'the previous release signs')).toBe(currentWallet)
    // The previous release still writes what this one reads.
    const laterWallet = await createWallet(restartedUrl, 'made by the previous release after the upgrade')
    expect(await signer(currentUrl, laterWallet, 'the current release signs')).toBe(laterWallet)
  } else {
    // A contraction: the previous release refuses the database and exits 1 before it listens. It
    // names every step it cannot read: the first contraction and every step after it (an expansion
    // after a contraction needs code that knows that contraction).
    const unreadable = since.slice(since.indexOf(contractions[0]!))
    const refused = run('previous', ['--port', String(await getFreePort())])
    expect((await refused.exited).code).toBe(1)
    expect(refused.stderr()).toContain(`The database has migration ${unreadable.join(', ')} of a newer version of kms; run that version or a newer one`)
    expect(refused.logs().filter(listening)).toEqual([])
  }
}, 240_000)
