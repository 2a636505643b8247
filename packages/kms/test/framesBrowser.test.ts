import { readFileSync } from 'node:fs'
import { p256 } from '@noble/curves/p256'
import { sha256 } from '@noble/hashes/sha2'
import { createBase58check } from '@scure/base'
import { ApiKeyStamper } from '@turnkey/api-key-stamper'
import { describe, expect, test } from 'vitest'
import { openCredentialBundle, openExportBundle, readImportBundle, sealImportBundle, stamp } from '../src/frames/browser/bundles.js'
import { type FrameWindow, openFrameChannel } from '../src/frames/browser/channel.js'
import { DEFAULT_EMBEDDED_KEY_TTL_MS, type EmbeddedKey, embeddedKeyStorageKey, embeddedKeyStore } from '../src/frames/browser/embeddedKey.js'
import { base58checkDecode, bytesToHex, hexToBytes, utf8Decode } from '../src/frames/browser/encoding.js'
import { hpkeOpen, hpkeSeal } from '../src/frames/browser/hpke.js'
import { derToP1363, p1363ToDer, uncompressedPoint } from '../src/frames/browser/p256.js'
import { keyFormatOf, parseMnemonic, parsePrivateKey } from '../src/frames/browser/secrets.js'
import { parseSettings } from '../src/frames/browser/settings.js'
import { memoryStore } from '../src/frames/browser/storage.js'
import {
  credentialBundle,
  exportBundle,
  generateApiKeyPair,
  hpkeOpen as serviceOpen,
  hpkeSeal as serviceSeal,
  signBundle,
  verifyApiKeyStamp,
} from '../src/index.js'

// The frames' browser code, run in Node's WebCrypto: against the service's own bundle code
// (@hpke/core and noble underneath), a real bundle of the hosted service, and ApiKeyStamper.

/** An embedded key from a known private key, as the frame would hold it. */
async function embeddedKeyFrom(privateKeyHex: string): Promise<EmbeddedKey> {
  const prefix = '3041020100301306072a8648ce3d020106082a8648ce3d030107042730250201010420'
  const privateKey = await crypto.subtle.importKey('pkcs8', hexToBytes(prefix + privateKeyHex), { name: 'ECDH', namedCurve: 'P-256' }, false, ['deriveBits'])
  const publicKey = p256.getPublicKey(privateKeyHex, false)
  return { privateKey, publicKey: Uint8Array.from(publicKey), publicKeyHex: bytesToHex(publicKey), expiresAt: Number.POSITIVE_INFINITY }
}

const signer = generateApiKeyPair().apiPrivateKey
const signerPublicKey = bytesToHex(p256.getPublicKey(signer, false))

describe('p256', () => {
  test('default: decompresses points as noble does', () => {
    for (let index = 0; index < 32; index++) {
      const secret = p256.utils.randomPrivateKey()
      expect(bytesToHex(uncompressedPoint(p256.getPublicKey(secret, true)))).toBe(bytesToHex(p256.getPublicKey(secret, false)))
    }
  })

  test('default: DER and r ‖ s convert both ways, leading zeros and high bits included', () => {
    for (let index = 0; index < 64; index++) {
      const signature = p256.sign(sha256(Uint8Array.of(index)), p256.utils.randomPrivateKey())
      const der = signature.toDERRawBytes()
      expect(bytesToHex(derToP1363(der))).toBe(bytesToHex(signature.toCompactRawBytes()))
      expect(bytesToHex(p1363ToDer(signature.toCompactRawBytes()))).toBe(bytesToHex(der))
    }
    const small = new Uint8Array(64)
    small[31] = 1
    small[32] = 0x80
    expect(bytesToHex(p1363ToDer(small))).toBe(`30${'26'}020101022100${'80'}${'00'.repeat(31)}`)
  })

  test('error: not a point, not DER', () => {
    expect(() => uncompressedPoint(hexToBytes(`02${'ff'.repeat(32)}`))).toThrow('not a P-256 public key')
    expect(() => uncompressedPoint(hexToBytes('05'))).toThrow('not a P-256 public key')
    expect(() => derToP1363(hexToBytes('3006020101020102ff'))).toThrow('the signature is not DER')
  })
})

describe('encoding', () => {
  test('default: base58check decodes what @scure/base encodes, leading zeros kept', async () => {
    const base58check = createBase58check(sha256)
    for (const payload of [Uint8Array.of(0, 0, 1, 2, 3), crypto.getRandomValues(new Uint8Array(80))])
      expect(bytesToHex(await base58checkDecode(base58check.encode(payload)))).toBe(bytesToHex(payload))
  })

  test('error: a changed character fails the checksum; a foreign one is refused', async () => {
    const text = createBase58check(sha256).encode(Uint8Array.of(1, 2, 3, 4, 5, 6))
    await expect(base58checkDecode(`${text.slice(0, -1)}${text.endsWith('2') ? '3' : '2'}`)).rejects.toThrow('the bundle checksum does not match')
    await expect(base58checkDecode('0OIl')).rejects.toThrow('the bundle is not base58check')
  })
})

describe('hpke', () => {
  test('default: the service opens what the frame seals', async () => {
    const recipient = generateApiKeyPair()
    const plaintext = new TextEncoder().encode(`${'abandon '.repeat(11)}about`)
    const { enc, ciphertext } = await hpkeSeal({ recipientPublicKey: hexToBytes(recipient.apiPublicKey), plaintext })
    expect(enc).toHaveLength(65)
    expect(ciphertext).toHaveLength(plaintext.length + 16)
    expect(bytesToHex(await serviceOpen(recipient.apiPrivateKey, enc, ciphertext))).toBe(bytesToHex(plaintext))
  })

  test('default: the frame opens what the service seals', async () => {
    const recipient = generateApiKeyPair()
    const key = await embeddedKeyFrom(recipient.apiPrivateKey)
    const { enc, ciphertext } = await serviceSeal(recipient.apiPublicKey, Uint8Array.of(1, 2, 3))
    expect(await hpkeOpen({ recipientPrivateKey: key.privateKey, recipientPublicKey: key.publicKey, enc, ciphertext })).toEqual(Uint8Array.of(1, 2, 3))
    // The encapsulated key may come compressed, as in credential bundles.
    const compressed = p256.ProjectivePoint.fromHex(enc).toRawBytes(true)
    expect(await hpkeOpen({ recipientPrivateKey: key.privateKey, recipientPublicKey: key.publicKey, enc: compressed, ciphertext })).toEqual(
      Uint8Array.of(1, 2, 3),
    )
  })

  test('error: another key, or a changed byte, does not open', async () => {
    const recipient = generateApiKeyPair()
    const other = await embeddedKeyFrom(generateApiKeyPair().apiPrivateKey)
    const { enc, ciphertext } = await serviceSeal(recipient.apiPublicKey, Uint8Array.of(1, 2, 3))
    await expect(hpkeOpen({ recipientPrivateKey: other.privateKey, recipientPublicKey: other.publicKey, enc, ciphertext })).rejects.toThrow(
      'the bundle does not open with this frame’s key',
    )
    const mine = await embeddedKeyFrom(recipient.apiPrivateKey)
    ciphertext[0]! ^= 1
    await expect(hpkeOpen({ recipientPrivateKey: mine.privateKey, recipientPublicKey: mine.publicKey, enc, ciphertext })).rejects.toThrow(
      'the bundle does not open with this frame’s key',
    )
  })
})

describe('auth frame: credential bundles and stamps', () => {
  test('default: opens the service’s credential bundle and stamps as ApiKeyStamper does', async () => {
    const embedded = generateApiKeyPair()
    const session = generateApiKeyPair()
    const bundle = await credentialBundle(embedded.apiPublicKey, hexToBytes(session.apiPrivateKey))
    const credential = await openCredentialBundle(bundle, await embeddedKeyFrom(embedded.apiPrivateKey))
    expect(credential.publicKey).toBe(session.apiPublicKey)
    expect(credential.key.extractable).toBe(false)

    const body = JSON.stringify({ organizationId: 'org', type: 'ACTIVITY_TYPE_X', parameters: { note: 'ünïcode ✓' } })
    const header = await stamp(credential, body)
    expect(verifyApiKeyStamp(header, new TextEncoder().encode(body))).toEqual({ publicKey: session.apiPublicKey, scheme: 'SIGNATURE_SCHEME_TK_API_P256' })
    // Same JSON shape and key order as the official stamper's.
    const official = await new ApiKeyStamper({ apiPublicKey: session.apiPublicKey, apiPrivateKey: session.apiPrivateKey }).stamp(body)
    const keysOf = (value: string) => Object.keys(JSON.parse(Buffer.from(value, 'base64url').toString('utf8')) as object)
    expect(keysOf(header)).toEqual(keysOf(official.stampHeaderValue))
    expect(header).toMatch(/^[A-Za-z0-9_-]+$/)
  })

  test('error: a bundle for another key', async () => {
    const bundle = await credentialBundle(generateApiKeyPair().apiPublicKey, hexToBytes(generateApiKeyPair().apiPrivateKey))
    await expect(openCredentialBundle(bundle, await embeddedKeyFrom(generateApiKeyPair().apiPrivateKey))).rejects.toThrow(
      'the bundle does not open with this frame’s key',
    )
  })
})

describe('export frame: export bundles', () => {
  const vector = JSON.parse(readFileSync(new URL('./vectors/turnkey-export-bundle.json', import.meta.url), 'utf8')) as {
    bundle: { data: string; enclaveQuorumPublic: string }
    recipientPrivateKeyHex: string
  }

  test('default: opens a real bundle of the hosted service, given its signer', async () => {
    const organizationId = (JSON.parse(Buffer.from(vector.bundle.data, 'hex').toString('utf8')) as { organizationId: string }).organizationId
    const plaintext = await openExportBundle({
      bundle: JSON.stringify(vector.bundle),
      organizationId,
      signerPublicKeys: [vector.bundle.enclaveQuorumPublic],
      embeddedKey: await embeddedKeyFrom(vector.recipientPrivateKeyHex),
    })
    expect(utf8Decode(plaintext).split(' ').slice(0, 3)).toEqual(['leaf', 'lady', 'until'])
  })

  test('default: opens the service’s bundle', async () => {
    const embedded = generateApiKeyPair()
    const bundle = await exportBundle({
      signerPrivateKey: signer,
      organizationId: 'org-1',
      targetPublicKey: embedded.apiPublicKey,
      plaintext: new TextEncoder().encode(`${'zoo '.repeat(11)}wrong`),
    })
    const plaintext = await openExportBundle({
      bundle,
      organizationId: 'org-1',
      signerPublicKeys: [signerPublicKey],
      embeddedKey: await embeddedKeyFrom(embedded.apiPrivateKey),
    })
    expect(utf8Decode(plaintext)).toBe(`${'zoo '.repeat(11)}wrong`)
  })

  test('error: another signer, a forged signer field, another organization, another version', async () => {
    const embedded = generateApiKeyPair()
    const embeddedKey = await embeddedKeyFrom(embedded.apiPrivateKey)
    const other = generateApiKeyPair().apiPrivateKey
    const otherPublic = bytesToHex(p256.getPublicKey(other, false))
    const forged = await exportBundle({ signerPrivateKey: other, organizationId: 'org-1', targetPublicKey: embedded.apiPublicKey, plaintext: Uint8Array.of(1) })
    const open = (bundle: string, organizationId = 'org-1') => openExportBundle({ bundle, organizationId, signerPublicKeys: [signerPublicKey], embeddedKey })
    await expect(open(forged)).rejects.toThrow(`the bundle is signed by ${otherPublic}, not by this service's signer ${signerPublicKey}`)
    await expect(open(JSON.stringify({ ...JSON.parse(forged), enclaveQuorumPublic: signerPublicKey }))).rejects.toThrow('the bundle signature does not verify')
    const { enclaveQuorumPublic: _, ...unnamed } = JSON.parse(forged) as Record<string, string>
    await expect(open(JSON.stringify(unnamed))).rejects.toThrow('the bundle signature does not verify')
    const genuine = await exportBundle({
      signerPrivateKey: signer,
      organizationId: 'org-1',
      targetPublicKey: embedded.apiPublicKey,
      plaintext: Uint8Array.of(1),
    })
    await expect(open(genuine, 'org-2')).rejects.toThrow('the bundle belongs to organization org-1, not org-2')
    await expect(open(JSON.stringify({ ...JSON.parse(genuine), version: 'v2' }))).rejects.toThrow('unsupported bundle version "v2"')
    await expect(open('not json')).rejects.toThrow('the bundle is not JSON')
  })
})

describe('signer rotation: the frames accept the signer and its next key', () => {
  const next = generateApiKeyPair().apiPrivateKey
  const nextPublicKey = bytesToHex(p256.getPublicKey(next, false))
  const pinned = [signerPublicKey, nextPublicKey]

  test('behavior: a frame that pins both opens export and import bundles of either key, named or not', async () => {
    const embedded = generateApiKeyPair()
    const embeddedKey = await embeddedKeyFrom(embedded.apiPrivateKey)
    const targetPublic = bytesToHex(p256.getPublicKey(generateApiKeyPair().apiPrivateKey, false))
    for (const key of [signer, next]) {
      const bundle = await exportBundle({ signerPrivateKey: key, organizationId: 'org-1', targetPublicKey: embedded.apiPublicKey, plaintext: Uint8Array.of(7) })
      expect(await openExportBundle({ bundle, organizationId: 'org-1', signerPublicKeys: pinned, embeddedKey })).toEqual(Uint8Array.of(7))
      const { enclaveQuorumPublic: _, ...unnamed } = JSON.parse(bundle) as Record<string, string>
      expect(await openExportBundle({ bundle: JSON.stringify(unnamed), organizationId: 'org-1', signerPublicKeys: pinned, embeddedKey })).toEqual(
        Uint8Array.of(7),
      )
      const imported = signBundle(key, { organizationId: 'org-1', userId: 'user-1', targetPublic })
      expect(bytesToHex(await readImportBundle({ bundle: imported, organizationId: 'org-1', userId: 'user-1', signerPublicKeys: pinned }))).toBe(targetPublic)
    }
  })

  test('error: once the old key is dropped its bundles are refused; a third key, or the next key named over the old key’s signature, never opens', async () => {
    const embedded = generateApiKeyPair()
    const embeddedKey = await embeddedKeyFrom(embedded.apiPrivateKey)
    const old = await exportBundle({ signerPrivateKey: signer, organizationId: 'org-1', targetPublicKey: embedded.apiPublicKey, plaintext: Uint8Array.of(7) })
    await expect(openExportBundle({ bundle: old, organizationId: 'org-1', signerPublicKeys: [nextPublicKey], embeddedKey })).rejects.toThrow(
      `the bundle is signed by ${signerPublicKey}, not by this service's signer ${nextPublicKey}`,
    )
    const other = generateApiKeyPair().apiPrivateKey
    const third = await exportBundle({ signerPrivateKey: other, organizationId: 'org-1', targetPublicKey: embedded.apiPublicKey, plaintext: Uint8Array.of(7) })
    await expect(openExportBundle({ bundle: third, organizationId: 'org-1', signerPublicKeys: pinned, embeddedKey })).rejects.toThrow(
      `the bundle is signed by ${bytesToHex(p256.getPublicKey(other, false))}, not by this service's signer ${signerPublicKey} or ${nextPublicKey}`,
    )
    const { enclaveQuorumPublic: _, ...unnamed } = JSON.parse(third) as Record<string, string>
    await expect(openExportBundle({ bundle: JSON.stringify(unnamed), organizationId: 'org-1', signerPublicKeys: pinned, embeddedKey })).rejects.toThrow(
      'the bundle signature does not verify',
    )
    const renamed = JSON.stringify({ ...JSON.parse(old), enclaveQuorumPublic: nextPublicKey })
    await expect(openExportBundle({ bundle: renamed, organizationId: 'org-1', signerPublicKeys: pinned, embeddedKey })).rejects.toThrow(
      'the bundle signature does not verify',
    )
  })
})

describe('import frame: import bundles', () => {
  test('default: verifies the target, seals a phrase the service opens', async () => {
    const target = generateApiKeyPair()
    const targetPublic = bytesToHex(p256.getPublicKey(target.apiPrivateKey, false))
    const bundle = signBundle(signer, { organizationId: 'org-1', userId: 'user-1', targetPublic })
    const key = await readImportBundle({ bundle, organizationId: 'org-1', userId: 'user-1', signerPublicKeys: [signerPublicKey] })
    expect(bytesToHex(key)).toBe(targetPublic)
    const encrypted = JSON.parse(
      await sealImportBundle(key, parseMnemonic('  Legal winner thank year wave sausage worth useful legal winner thank yellow \n')),
    ) as Record<string, string>
    expect(Object.keys(encrypted)).toEqual(['encappedPublic', 'ciphertext'])
    const opened = await serviceOpen(target.apiPrivateKey, hexToBytes(encrypted['encappedPublic']!), hexToBytes(encrypted['ciphertext']!))
    expect(new TextDecoder().decode(opened)).toBe('legal winner thank year wave sausage worth useful legal winner thank yellow')
  })

  test('error: another signer, organization or user', async () => {
    const targetPublic = bytesToHex(p256.getPublicKey(generateApiKeyPair().apiPrivateKey, false))
    const read = (bundle: string, organizationId = 'org-1', userId = 'user-1') =>
      readImportBundle({ bundle, organizationId, userId, signerPublicKeys: [signerPublicKey] })
    const other = generateApiKeyPair().apiPrivateKey
    await expect(read(signBundle(other, { organizationId: 'org-1', userId: 'user-1', targetPublic }))).rejects.toThrow('the bundle is signed by')
    const genuine = signBundle(signer, { organizationId: 'org-1', userId: 'user-1', targetPublic })
    await expect(read(genuine, 'org-2')).rejects.toThrow('the bundle belongs to organization org-1, not org-2')
    await expect(read(genuine, 'org-1', 'user-2')).rejects.toThrow('the bundle belongs to user user-1, not user-2')
  })

  test('error: what the user types is checked before anything is encrypted', () => {
    expect(() => parseMnemonic('one two three')).toThrow('a secret recovery phrase has 12, 15, 18, 21 or 24 words')
    expect(() => parseMnemonic(`${'abandon '.repeat(11)}ab0ut`)).toThrow('a secret recovery phrase has only English BIP-39 words')
    expect(bytesToHex(parsePrivateKey(` 0x${'0a'.repeat(32)} `))).toBe('0a'.repeat(32))
    expect(() => parsePrivateKey('0a'.repeat(31))).toThrow('a private key is 64 hexadecimal characters')
    expect(keyFormatOf(undefined)).toBe('HEXADECIMAL')
    expect(() => keyFormatOf('SOLANA')).toThrow('key format "SOLANA" is not supported: these frames use HEXADECIMAL keys')
  })
})

describe('APPLY_SETTINGS', () => {
  const accepts = () => true

  test('default: allowed styles, labelColor on the label', () => {
    expect(parseSettings(JSON.stringify({ styles: { fontSize: '14px', labelColor: '#333', borderRadius: '8px' } }), accepts)).toEqual([
      { target: 'secret', property: 'font-size', value: '14px' },
      { target: 'label', property: 'color', value: '#333' },
      { target: 'secret', property: 'border-radius', value: '8px' },
    ])
  })

  test('error: other properties, values that reach further, passphrases, values the browser refuses', () => {
    const parse =
      (settings: unknown, check: (property: string, value: string) => boolean = accepts) =>
      () =>
        parseSettings(JSON.stringify(settings), check)
    expect(parse({ styles: { background: 'red' } })).toThrow('style background is not allowed; allowed: padding, margin,')
    expect(parse({ styles: { color: 'red; position: fixed' } })).toThrow('style color: "red; position: fixed" is not an allowed value')
    expect(parse({ styles: { backgroundColor: 'url(https://evil.example/x)' } })).toThrow('is not an allowed value')
    expect(parse({ styles: { width: 'var(--x)' } })).toThrow('is not an allowed value')
    expect(parse({ enablePassphrase: true })).toThrow('BIP-39 passphrases are not supported')
    expect(parse({ script: 'x' })).toThrow('unknown settings: script')
    expect(parse({ styles: { fontSize: 'huge' } }, () => false)).toThrow('style fontSize: "huge" is not a valid font-size')
    expect(() => parseSettings('{', accepts)).toThrow('the settings are not JSON')
  })
})

describe('embedded key', () => {
  test('default: a non-extractable key kept in the store with its expiry and parent origin; reused until it expires', async () => {
    let now = 1_000
    const storage = memoryStore()
    const keys = embeddedKeyStore({ store: storage, page: 'auth', now: () => now })
    const key = await keys.getOrCreate('https://app.example', DEFAULT_EMBEDDED_KEY_TTL_MS)
    expect(key.publicKeyHex).toMatch(/^04[0-9a-f]{128}$/)
    const stored = storage.map.get(embeddedKeyStorageKey('auth')) as { expiresAt: number; parentOrigin: string; privateKey: CryptoKey; publicKey: Uint8Array }
    expect({
      expiresAt: stored.expiresAt,
      parentOrigin: stored.parentOrigin,
      algorithm: stored.privateKey.algorithm,
      extractable: stored.privateKey.extractable,
      usages: stored.privateKey.usages,
      publicKey: bytesToHex(stored.publicKey),
    }).toEqual({
      expiresAt: 1_000 + 48 * 3600_000,
      parentOrigin: 'https://app.example',
      algorithm: { name: 'ECDH', namedCurve: 'P-256' },
      extractable: false,
      usages: ['deriveBits'],
      publicKey: key.publicKeyHex,
    })
    await expect(crypto.subtle.exportKey('jwk', stored.privateKey)).rejects.toThrow('key is not extractable')
    expect((await keys.getOrCreate('https://app.example', 5)).publicKeyHex).toBe(key.publicKeyHex)
    // Another parent origin never gets this key.
    expect(await keys.get('https://other.example')).toBeUndefined()
    expect(storage.map.size).toBe(0)
    const short = await keys.getOrCreate('https://app.example', 60_000)
    now += 60_000
    expect(await keys.get('https://app.example')).toBeUndefined()
    expect((await keys.getOrCreate('https://app.example', 60_000)).publicKeyHex).not.toBe(short.publicKeyHex)
  })
})

describe('channel', () => {
  type Posted = { message: unknown; targetOrigin: string }

  /** A frame's window embedded by `parent`, nested when `top` differs; and a way to post it messages. */
  function frameWindow(options: { nested?: boolean; ancestorOrigins?: string[] } = {}) {
    const listeners: ((event: MessageEvent) => void)[] = []
    const posted: Posted[] = []
    const windowLike = (name: string) => ({
      name,
      postMessage: (message: unknown, { targetOrigin }: { targetOrigin: string }) => posted.push({ message, targetOrigin }),
    })
    const parent = windowLike('parent')
    const frame: FrameWindow = {
      parent,
      top: options.nested ? windowLike('top') : parent,
      location: options.ancestorOrigins
        ? { ancestorOrigins: { length: options.ancestorOrigins.length, item: (index) => options.ancestorOrigins![index] ?? null } }
        : {},
      addEventListener: (_type, listener) => void listeners.push(listener),
    }
    return {
      frame,
      parent,
      posted,
      /** Posts TURNKEY_INIT_MESSAGE_CHANNEL; resolves with the first message on the port. */
      init(origin: string, extra: Record<string, unknown> = {}, source: unknown = parent) {
        const channel = new MessageChannel()
        const replies: unknown[] = []
        const waiting: ((value: unknown) => void)[] = []
        channel.port1.onmessage = (event) => {
          const waiter = waiting.shift()
          if (waiter) waiter(event.data)
          else replies.push(event.data)
        }
        const next = () => (replies.length ? Promise.resolve(replies.shift()) : new Promise((resolve) => waiting.push(resolve)))
        const event = { data: { type: 'TURNKEY_INIT_MESSAGE_CHANNEL', ...extra }, origin, source, ports: [channel.port2] } as unknown as MessageEvent
        for (const listener of listeners) listener(event)
        return {
          next,
          post: (message: Record<string, unknown>) => channel.port1.postMessage(message),
          request: (message: Record<string, unknown>) => {
            channel.port1.postMessage(message)
            return next()
          },
          close: () => channel.port1.close(),
        }
      },
    }
  }

  const open = (frame: FrameWindow, storage = memoryStore(), log: string[] = []) =>
    openFrameChannel({
      window: frame,
      page: 'auth',
      parentOrigins: ['https://app.example'],
      keys: embeddedKeyStore({ store: storage, page: 'auth' }),
      handlers: {
        async ECHO(request) {
          return { type: 'ECHOED', value: request.value }
        },
      },
      log: (message) => log.push(message),
    })

  test('default: the embedding page gets PUBLIC_KEY_READY, then answers with the requestId echoed', async () => {
    const { frame, init } = frameWindow({ ancestorOrigins: ['https://app.example'] })
    const storage = memoryStore()
    expect(open(frame, storage)).toEqual({ refused: undefined })
    const channel = init('https://app.example')
    const ready = (await channel.next()) as { type: string; value: string }
    expect(ready).toEqual({ type: 'PUBLIC_KEY_READY', value: expect.stringMatching(/^04[0-9a-f]{128}$/) })
    expect(await channel.request({ type: 'ECHO', requestId: 'r1', value: 'hi' })).toEqual({ type: 'ECHOED', value: 'hi', requestId: 'r1' })
    expect(await channel.request({ type: 'GET_EMBEDDED_PUBLIC_KEY', requestId: 'r2' })).toEqual({
      type: 'EMBEDDED_PUBLIC_KEY',
      value: ready.value,
      requestId: 'r2',
    })
    expect(await channel.request({ type: 'RESET_EMBEDDED_KEY', requestId: 'r3' })).toEqual({ type: 'EMBEDDED_KEY_RESET', value: true, requestId: 'r3' })
    expect(storage.map.size).toBe(0)
    expect(await channel.request({ type: 'GET_EMBEDDED_PUBLIC_KEY', requestId: 'r4' })).toEqual({ type: 'EMBEDDED_PUBLIC_KEY', value: null, requestId: 'r4' })
    const fresh = (await channel.request({ type: 'INIT_EMBEDDED_KEY', requestId: 'r5' })) as { value: string }
    expect(fresh).toEqual({ type: 'EMBEDDED_PUBLIC_KEY', value: expect.stringMatching(/^04/), requestId: 'r5' })
    expect(fresh.value).not.toBe(ready.value)
    channel.close()
  })

  test('behavior: dangerouslyOverrideIframeKeyTtl sets the new key’s lifetime', async () => {
    const { frame, init } = frameWindow()
    const storage = memoryStore()
    open(frame, storage)
    const before = Date.now()
    const channel = init('https://app.example', { dangerouslyOverrideIframeKeyTtl: 60_000 })
    await channel.next()
    const { expiresAt } = storage.map.get(embeddedKeyStorageKey('auth')) as { expiresAt: number }
    expect(expiresAt - before).toBeGreaterThanOrEqual(60_000)
    expect(expiresAt - Date.now()).toBeLessThanOrEqual(60_000)
    channel.close()
  })

  test('error: requests the page does not handle, or without a requestId', async () => {
    const { frame, init } = frameWindow()
    const log: string[] = []
    open(frame, memoryStore(), log)
    const channel = init('https://app.example')
    await channel.next()
    expect(await channel.request({ type: 'SIGN_TRANSACTION', requestId: 'r1' })).toEqual({
      type: 'ERROR',
      value: 'the auth frame does not handle SIGN_TRANSACTION',
      requestId: 'r1',
    })
    expect(await channel.request({ type: 'toString', requestId: 'r2' })).toEqual({
      type: 'ERROR',
      value: 'the auth frame does not handle toString',
      requestId: 'r2',
    })
    channel.post({ type: 'ECHO' })
    expect(await channel.request({ type: 'ECHO', requestId: 'r3', value: 1 })).toEqual({ type: 'ECHOED', value: 1, requestId: 'r3' })
    expect(log).toEqual(['ignored a message without a type and a requestId'])
    channel.close()
  })

  test('error: another origin, another sender, a second channel or a bad TTL are refused with a legacy ERROR to the sender', async () => {
    const { frame, init, posted } = frameWindow()
    const log: string[] = []
    open(frame, memoryStore(), log)
    init('https://evil.example')
    const sibling = { postMessage: (message: unknown, { targetOrigin }: { targetOrigin: string }) => posted.push({ message, targetOrigin }) }
    init('https://app.example', {}, sibling)
    init('https://app.example', { dangerouslyOverrideIframeKeyTtl: -1 })
    expect(posted).toEqual([
      { message: { type: 'ERROR', value: 'origin https://evil.example is not allowed to open a channel to this frame' }, targetOrigin: 'https://evil.example' },
      { message: { type: 'ERROR', value: 'the channel must be opened by the page that embeds this frame' }, targetOrigin: 'https://app.example' },
      {
        message: { type: 'ERROR', value: 'dangerouslyOverrideIframeKeyTtl must be a positive whole number of milliseconds' },
        targetOrigin: 'https://app.example',
      },
    ])
    expect(log).toEqual([
      'refused a channel from https://evil.example: origin https://evil.example is not allowed to open a channel to this frame',
      'refused a channel from https://app.example: the channel must be opened by the page that embeds this frame',
      'refused a channel from https://app.example: dangerouslyOverrideIframeKeyTtl must be a positive whole number of milliseconds',
    ])
    // The refusals took nothing: the embedding page still opens the one channel.
    const channel = init('https://app.example')
    expect(await channel.next()).toMatchObject({ type: 'PUBLIC_KEY_READY' })
    init('https://app.example')
    expect(posted.at(-1)).toEqual({ message: { type: 'ERROR', value: 'a channel is already open' }, targetOrigin: 'https://app.example' })
    channel.close()
  })

  test('error: a nested frame, an unframed page or a foreign embedder refuses to run', () => {
    expect(open(frameWindow({ nested: true }).frame)).toEqual({ refused: 'this frame refuses to run inside a nested frame' })
    expect(open(frameWindow({ ancestorOrigins: ['https://app.example', 'https://app.example'] }).frame)).toEqual({
      refused: 'this frame refuses to run inside a nested frame',
    })
    expect(open(frameWindow({ ancestorOrigins: ['https://evil.example'] }).frame)).toEqual({
      refused: 'origin https://evil.example is not allowed to embed this frame',
    })
    const unframed: { parent?: unknown; top?: unknown } & Omit<FrameWindow, 'parent' | 'top'> = { location: {}, addEventListener: () => undefined }
    unframed.parent = unframed.top = unframed
    expect(open(unframed as FrameWindow)).toEqual({ refused: 'this page runs only inside a frame of an allowed app' })
    const { frame, init, posted } = frameWindow({ nested: true })
    open(frame)
    init('https://app.example')
    expect(posted).toEqual([{ message: { type: 'ERROR', value: 'this frame refuses to run inside a nested frame' }, targetOrigin: 'https://app.example' }])
  })
})
