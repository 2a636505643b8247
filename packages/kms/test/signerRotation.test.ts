import { randomBytes } from 'node:crypto'
import { mkdtemp } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { getFreePort } from '@latchkey/devnet'
import { p256 } from '@noble/curves/p256'
import { ApiKeyStamper } from '@turnkey/api-key-stamper'
import { TurnkeyClient } from '@turnkey/http'
import { afterEach, describe, expect, test } from 'vitest'
import { createKms, generateApiKeyPair, type Kms, SIGNER_PATH } from '../src/index.js'
import { testDatabase } from './database.js'

// Rotating the signer key without breaking open frames or live read-only sessions
// (deploy/ROTATION.md): every instance first learns the next key, then the instances swap to it
// one by one and keep the old key as their "next" until what it signed has expired.

const keyPair = () => {
  const privateKey = Buffer.from(p256.utils.randomPrivateKey()).toString('hex')
  return { privateKey, publicKey: Buffer.from(p256.getPublicKey(privateKey, false)).toString('hex') }
}
const [oldSigner, newSigner] = [keyPair(), keyPair()]

const started: Kms[] = []
afterEach(async () => {
  for (const kms of started.splice(0)) await kms.stop()
})

/** A kms on `database` with `signer` and, optionally, the other key as its next one. */
async function kmsWith(
  database: Awaited<ReturnType<typeof testDatabase>>,
  masterKey: Uint8Array,
  signer: { privateKey: string },
  next?: { publicKey: string },
) {
  const kms = createKms({
    port: await getFreePort(),
    ...database,
    masterKey,
    signerPrivateKey: signer.privateKey,
    nextSignerPublicKey: next?.publicKey,
    frames: { port: await getFreePort(), parentOrigins: ['http://localhost:5173'] },
  })
  await kms.start()
  started.push(kms)
  return kms
}

describe('signer rotation', () => {
  test('behavior: the next key is published beside the signer and baked into every frame page', async () => {
    const kms = await kmsWith(await testDatabase(), randomBytes(32), oldSigner, newSigner)
    expect(await (await fetch(`${kms.url}${SIGNER_PATH}`)).json()).toEqual({ signerPublicKey: oldSigner.publicKey, nextSignerPublicKey: newSigner.publicKey })
    for (const page of ['export', 'import'])
      expect(await (await kms.framesApp!.request(`/${page}`)).text()).toContain(
        `<meta name="latchkey-signer-public-key" content="${oldSigner.publicKey} ${newSigner.publicKey}">`,
      )
  })

  test('behavior: a read-only session the old signer issued works on an instance swapped to the new key while it keeps the old one as next; dropped, it is refused', async () => {
    const database = await testDatabase(join(await mkdtemp(join(tmpdir(), 'latchkey-signer-')), 'kms.db'))
    const masterKey = randomBytes(32)
    const before = await kmsWith(database, masterKey, oldSigner, newSigner)
    const owner = generateApiKeyPair()
    const { organizationId } = await before.createParentOrganization({ name: 'Rotation', userName: 'owner', publicKey: owner.apiPublicKey })
    const { activity } = await new TurnkeyClient({ baseUrl: before.url }, new ApiKeyStamper(owner)).createReadOnlySession({
      type: 'ACTIVITY_TYPE_CREATE_READ_ONLY_SESSION',
      timestampMs: String(Date.now()),
      organizationId,
      parameters: {},
    })
    const session = activity.result.createReadOnlySessionResult!.session
    await before.stop()
    const whoami = async (kms: Kms) => {
      const response = await fetch(`${kms.url}/public/v1/query/whoami`, {
        method: 'POST',
        body: JSON.stringify({ organizationId }),
        headers: { 'X-Session': session },
      })
      return [response.status, await response.json()]
    }

    const swapped = await kmsWith(database, masterKey, newSigner, oldSigner)
    expect(await whoami(swapped)).toEqual([200, expect.objectContaining({ organizationId })])
    await swapped.stop()

    const done = await kmsWith(database, masterKey, newSigner)
    expect(await whoami(done)).toEqual([
      401,
      expect.objectContaining({ code: 16, message: 'invalid read-only session: not a session token this service issued' }),
    ])
  })
})
