import { serve } from '@hono/node-server'
import { getFreePort } from '@latchkey/devnet'
import { createKms, generateApiKeyPair, type Kms } from '@latchkey/kms'
import { createServerApp, openStore, type PaymasterPolicyInput, SESSION_COOKIE } from '@latchkey/server'
import { ApiKeyStamper } from '@turnkey/api-key-stamper'
import { decryptExportBundle, generateP256KeyPair } from '@turnkey/crypto'
import { generateSync } from 'otplib'
import { defineChain } from 'viem'
import { afterAll, beforeAll, inject } from 'vitest'
import { sealCode } from '../../server/test/consentFrameCode.js'
import type { MfaCarried, MfaSubmit } from '../src/consentFrame.js'
import { BATCH_EXECUTOR_ADDRESS, type KeyValueStorage, type SessionKeyStore } from '../src/index.js'

/** The origin of the app page the wallet runs in, as the backend allows it. */
const PAGE_ORIGIN = 'http://localhost:5173'

/**
 * A real kms and a real app backend on loopback for one test file, sharing a clock the test can
 * move, and chain A of the unit run's anvil. Registers its own beforeAll/afterAll.
 *
 * @example
 * const stack = useEmbeddedStack()
 * test('…', async () => { const wallet = createEmbeddedWallet({ backendUrl: stack.backendUrl, … }) })
 */
export function useEmbeddedStack(
  options: {
    /** The backend's ERC-7677 paymaster service (`POST /paymaster`), read when the backend starts. */
    paymaster?: () => { signerPrivateKey: `0x${string}`; policy: PaymasterPolicyInput }
  } = {},
) {
  const backendKey = generateApiKeyPair()
  const stack = {
    clock: Date.now(),
    now: () => stack.clock,
    kms: undefined as unknown as Kms,
    organizationId: '',
    /** The parent organization's API key pair (the backend's). */
    parentKey: backendKey,
    backendUrl: '',
    chain: defineChain({
      id: 31337,
      name: 'Anvil A',
      nativeCurrency: { name: 'Ether', symbol: 'ETH', decimals: 18 },
      rpcUrls: { default: { http: [inject('chainARpc')] } },
    }),
    /** The six-digit code of the newest sign-in email to `email`, from the kms's dev inbox (newest first). */
    async codeFor(email: string): Promise<string> {
      const inbox = (await (await fetch(`${stack.kms.url}/dev/mailbox.json`)).json()) as { messages: { to: string; text: string }[] }
      const message = inbox.messages.find((candidate) => candidate.to === email)
      return /code is (\d{6})/.exec(message!.text)![1]!
    },
    /** A browser's cookie jar for one user, and a log of the backend paths it called. */
    browserFetch() {
      // The backend's cookies by name: the session's, and the SIWE nonce's.
      const cookies = new Map<string, string>()
      const calls: string[] = []
      const fetchFn: typeof fetch = async (input, init) => {
        const url = new URL(String(input))
        if (url.origin === stack.backendUrl) calls.push(url.pathname)
        // As a browser sends them: the page's origin, and the backend's cookie.
        const headers = {
          ...(init?.headers as Record<string, string>),
          ...(url.origin === stack.backendUrl ? { origin: PAGE_ORIGIN } : {}),
          ...(cookies.size && url.origin === stack.backendUrl ? { cookie: [...cookies].map(([name, value]) => `${name}=${value}`).join('; ') } : {}),
        }
        const response = await fetch(input, { ...init, headers })
        for (const line of response.headers.getSetCookie()) {
          const [pair = ''] = line.split(';')
          const at = pair.indexOf('=')
          const [name, value] = [pair.slice(0, at), pair.slice(at + 1)]
          if (value === '' || /max-age=0\b/i.test(line)) cookies.delete(name)
          else cookies.set(name, value)
        }
        return response
      }
      return { fetchFn, calls, forget: () => cookies.delete(SESSION_COOKIE) }
    },
  }
  let stop: (() => Promise<void>) | undefined
  beforeAll(async () => {
    activeStack = stack
    stack.kms = createKms({ port: await getFreePort(), now: stack.now, eip7702Delegates: [BATCH_EXECUTOR_ADDRESS] })
    await stack.kms.start()
    stack.organizationId = (await stack.kms.createParentOrganization({ name: 'Demo', userName: 'backend', publicKey: backendKey.apiPublicKey })).organizationId
    const store = await openStore(':memory:')
    const app = createServerApp({
      store,
      kmsUrl: stack.kms.url,
      organizationId: stack.organizationId,
      ...backendKey,
      sessionSignerPublicKey: stack.kms.signerPublicKey,
      appName: 'Embedded test',
      allowedOrigins: [PAGE_ORIGIN],
      guests: true,
      now: stack.now,
      ipOf: () => '127.0.0.1',
      chains: [{ id: stack.chain.id, rpcUrl: inject('chainARpc') }],
      ...(options.paymaster ? { paymaster: options.paymaster() } : {}),
    })
    const port = await getFreePort()
    const server = serve({ fetch: app.fetch, port, hostname: '127.0.0.1' })
    stack.backendUrl = `http://127.0.0.1:${port}`
    stop = async () => {
      await new Promise<void>((resolve) => server.close(() => resolve()))
      await store.close()
      await stack.kms.stop()
    }
  })
  afterAll(() => stop?.())
  return stack
}

/** The file's stack: where memoryKeys' user reads the emailed code. */
let activeStack: ReturnType<typeof useEmbeddedStack> | undefined

/**
 * Session keys in memory (Node has no IndexedDB): the same contract, the private key in a closure.
 * Its `collectOtp` is the consent frame's COLLECT_OTP with a user who types the newest code from
 * the inbox (or `typeNext`'s), sealed with this key as the frame seals it. Its `secondFactor` is
 * the frame's ENROLL_TOTP and VERIFY_MFA with a user whose authenticator app holds `totp.secret`
 * (set by an enrolment, or by the test for another session of the same user): it opens the sealed
 * secret and recovery codes with a key of its own and types the code of the kms's clock.
 */
export function memoryKeys(): SessionKeyStore & {
  typeNext(code: string | ((sent: string) => string)): void
  totp: { secret?: string; recoveryCodes?: string[] }
} {
  let key: { apiPublicKey: string; apiPrivateKey: string } | undefined
  let next: string | ((sent: string) => string) | undefined
  const totp: { secret?: string; recoveryCodes?: string[] } = {}
  const open = async (bundle: string, organizationId: string, target: { privateKey: string }) =>
    JSON.parse(
      await decryptExportBundle({
        exportBundle: bundle,
        embeddedKey: target.privateKey,
        organizationId,
        returnMnemonic: true,
        dangerouslyOverrideSignerPublicKey: activeStack!.kms.signerPublicKey,
      }),
    )
  const answerOf = (carried: MfaCarried, resultKey: string) => {
    if (carried.status !== 200) throw new Error(`the kms refused: ${JSON.stringify(carried.body)}`)
    return (carried.body as { activity: { result: Record<string, Record<string, string>> } }).activity.result[resultKey]!
  }
  return {
    totp,
    async secondFactor(request, carry) {
      const target = generateP256KeyPair()
      const submit = async (op: string, type: string, parameters: Record<string, unknown>): Promise<MfaSubmit> => {
        const body = JSON.stringify({ type, timestampMs: String(activeStack!.now()), organizationId: request.value.organizationId, parameters })
        return { op, body, ...(await new ApiKeyStamper(key!).stamp(body)) }
      }
      const code = () => generateSync({ secret: totp.secret!, epoch: Math.floor(activeStack!.now() / 1000) })
      const verify = 'ACTIVITY_TYPE_LATCHKEY_VERIFY_MFA_FACTOR'
      if (request.type === 'VERIFY_MFA') {
        answerOf(await carry(await submit('verify_mfa_factor', verify, { factorId: request.value.factorId, code: code() })), 'verifyMfaFactorResult')
        return { type: 'MFA_VERIFIED', value: { verified: true } }
      }
      const created = answerOf(
        await carry(
          await submit('create_totp_factor', 'ACTIVITY_TYPE_LATCHKEY_CREATE_TOTP_FACTOR', {
            userId: request.value.userId,
            targetPublicKey: target.publicKeyUncompressed,
          }),
        ),
        'createTotpFactorResult',
      )
      totp.secret = (await open(created['secretBundle']!, request.value.organizationId, target)).secret
      const factorId = created['factorId']!
      const verified = answerOf(
        await carry(await submit('verify_mfa_factor', verify, { factorId, code: code(), targetPublicKey: target.publicKeyUncompressed })),
        'verifyMfaFactorResult',
      )
      totp.recoveryCodes = await open(verified['recoveryCodesBundle']!, request.value.organizationId, target)
      return { type: 'TOTP_ENROLLED', value: { factorId } }
    },
    /** The code the user types next: this one, or one made from the code the inbox has. */
    typeNext(code) {
      next = code
    },
    async collectOtp({ targetBundle, email }) {
      const typed = next
      next = undefined
      const code = typeof typed === 'string' ? typed : (typed ?? ((sent: string) => sent))(await activeStack!.codeFor(email))
      const sealed = await sealCode({ otpEncryptionTargetBundle: targetBundle, code, key: key!, signerPublicKey: activeStack!.kms.signerPublicKey })
      return { ...sealed, clientSignature: { ...sealed.clientSignature, scheme: 'CLIENT_SIGNATURE_SCHEME_API_P256' as const }, publicKey: key!.apiPublicKey }
    },
    async create() {
      key = generateApiKeyPair()
      return key.apiPublicKey
    },
    async publicKey() {
      return key?.apiPublicKey
    },
    stamper: { stamp: (payload) => new ApiKeyStamper(key!).stamp(payload) },
    async clear() {
      key = undefined
    },
  }
}

export function memoryStorage(): KeyValueStorage {
  const values = new Map<string, string>()
  return { getItem: (k) => values.get(k) ?? null, setItem: (k, v) => void values.set(k, v), removeItem: (k) => void values.delete(k) }
}
