import { createHash, randomInt, randomUUID, timingSafeEqual } from 'node:crypto'
import { p256 } from '@noble/curves/p256'
import { validateMnemonic } from '@scure/bip39'
import { wordlist } from '@scure/bip39/wordlists/english'
import { z } from 'zod'
import { ADMIN_ACTIVITIES, heldPrivateKey } from './admin/index.js'
import { exportBundle, hpkeOpen, signBundle } from './bundles.js'
import type { ActivityContext, ActivityHandler } from './context.js'
import { DEFAULT_SESSION_SECONDS, insertApiKey, insertAuthenticator, prepareCredential, registerCredential, sessionJwt } from './credentials.js'
import type { Db, WalletAccountRow, WalletRow } from './db.js'
import { GrpcCode, KmsError } from './errors.js'
import { type AccountParams, type DerivedAccount, deriveAccounts, digestOf, newMnemonic, signDigest, signTransaction } from './ethereum.js'
import { apiKeyParams, authenticatorParams, invalid, notFound, parse, targetPublicKey } from './params.js'
import { keepingWrites } from './refusal.js'
import { accountKeyRecord, open, openBytes, seal } from './secrets.js'
import { verifyRegistration } from './webauthn.js'

type ActivityKind = { intentKey: string; resultKey: string; run: ActivityHandler }

const accountParams = z.object({
  curve: z.string(),
  pathFormat: z.string(),
  path: z.string(),
  addressFormat: z.string(),
})

/** Creates a wallet with its first accounts; returns its id and addresses. */
async function createWallet(context: ActivityContext, organizationId: string, name: string, accounts: AccountParams[], mnemonicLength?: number) {
  const { db, masterKey, now } = context
  // One indexed look-up, not the organization's wallets: the unique (organization, name) constraint
  // stops a concurrent twin.
  if (await db.walletByName(organizationId, name)) throw new KmsError(GrpcCode.alreadyExists, `a wallet named "${name}" already exists`)
  const walletId = randomUUID()
  const mnemonic = newMnemonic(mnemonicLength)
  // Derive first, so a bad account parameter writes nothing.
  const derived = deriveAccounts(mnemonic, accounts)
  const at = now()
  await db.insertWallet({
    id: walletId,
    organization_id: organizationId,
    name,
    sealed_mnemonic: seal(masterKey, walletId, mnemonic),
    created_at: at,
    exported: 0,
    imported: 0,
  })
  await insertAccounts(context, walletId, organizationId, derived, at)
  return { walletId, addresses: derived.map((account) => account.address) }
}

/** Stores derived accounts of a wallet, each with its private key sealed beside it; the keys are zeroed. */
async function insertAccounts(
  context: Pick<ActivityContext, 'db' | 'masterKey'>,
  walletId: string,
  organizationId: string,
  accounts: readonly DerivedAccount[],
  at: number,
) {
  try {
    for (const account of accounts) {
      const id = randomUUID()
      await context.db.insertAccount({
        id,
        wallet_id: walletId,
        organization_id: organizationId,
        curve: account.curve,
        path_format: account.pathFormat,
        path: account.path,
        address_format: account.addressFormat,
        address: account.address,
        public_key: account.publicKey,
        created_at: at,
        sealed_private_key: seal(context.masterKey, accountKeyRecord(id), account.privateKey),
      })
    }
  } finally {
    for (const account of accounts) account.privateKey.fill(0)
  }
}

async function walletOf(db: Db, organizationId: string, walletId: string): Promise<WalletRow> {
  const wallet = await db.wallet(walletId, organizationId)
  if (!wallet) throw notFound(`wallet ${walletId} not found in organization ${organizationId}`)
  return wallet
}

/**
 * Runs `use` with the private key of the wallet account that `signWith` (an address) names in the
 * caller's organization, and zeroes the key after. The key is opened from its sealed copy (one
 * AES-GCM block); an account stored before keys were sealed is derived from the wallet's mnemonic
 * once and sealed for the next time.
 */
async function withAccountKey<result>(
  context: ActivityContext,
  signWith: string,
  use: (privateKey: Uint8Array, account: WalletAccountRow) => result | Promise<result>,
): Promise<result> {
  const { db, masterKey, caller } = context
  const account = await db.accountByAddress(caller.organizationId, signWith)
  if (!account) throw notFound(`no wallet account with address ${signWith} in organization ${caller.organizationId}`)
  let privateKey: Uint8Array
  if (account.sealed_private_key) privateKey = openBytes(masterKey, accountKeyRecord(account.id), account.sealed_private_key)
  else {
    const wallet = await walletOf(db, caller.organizationId, account.wallet_id)
    const params = { curve: account.curve, pathFormat: account.path_format, path: account.path, addressFormat: account.address_format }
    privateKey = deriveAccounts(open(masterKey, wallet.id, wallet.sealed_mnemonic), [params])[0]!.privateKey
    await db.sealAccountKey(account.id, seal(masterKey, accountKeyRecord(account.id), privateKey))
  }
  try {
    return await use(privateKey, account)
  } finally {
    privateKey.fill(0)
  }
}

/** Runs `use` with the key `signWith` names: a private key, by id or address (admin/privateKeys.ts), or else a wallet account's. Zeroed after. */
async function withSigningKey<result>(context: ActivityContext, signWith: string, use: (privateKey: Uint8Array) => result | Promise<result>): Promise<result> {
  const held = await heldPrivateKey(context, signWith)
  if (!held) return await withAccountKey(context, signWith, use)
  try {
    return await use(held)
  } finally {
    held.fill(0)
  }
}

/** A recovery credential works this long at most (SPEC §5). */
export const RECOVERY_CODE_SECONDS = 900
/** OTP codes: valid this long by default, and this many wrong guesses end one. */
export const OTP_DEFAULT_SECONDS = 300
export const OTP_MAX_ATTEMPTS = 3

async function userByEmail(context: ActivityContext, email: string) {
  const user = await context.db.userByEmail(context.caller.organizationId, email)
  if (!user) throw notFound(`no user with email ${email} in organization ${context.caller.organizationId}`)
  return user
}

const hashCode = (otpId: string, code: string) => createHash('sha256').update(`${otpId}:${code}`).digest()

function newCode(length: number, alphanumeric: boolean): string {
  const alphabet = alphanumeric ? 'ABCDEFGHJKLMNPQRSTUVWXYZ23456789' : '0123456789'
  return Array.from({ length }, () => alphabet[randomInt(alphabet.length)]).join('')
}

const createSubOrganization = z.object({
  subOrganizationName: z.string().min(1).max(256),
  rootQuorumThreshold: z.number().int().min(1),
  rootUsers: z
    .array(
      z.object({
        userName: z.string().min(1).max(256),
        userEmail: z.email().optional(),
        apiKeys: z.array(apiKeyParams).default([]),
        authenticators: z.array(authenticatorParams).default([]),
        oauthProviders: z.array(z.unknown()).default([]),
      }),
    )
    .min(1),
  wallet: z.object({ walletName: z.string().min(1), accounts: z.array(accountParams), mnemonicLength: z.number().int().optional() }).optional(),
})

const signRawPayload = z.object({ signWith: z.string().min(1), payload: z.string(), encoding: z.string(), hashFunction: z.string() })

/**
 * Activity types this service executes, by the exact `type` a client sends: the intent key the
 * envelope echoes and the result key the clients read (research/turnkey-api.md §1: keys do not
 * follow one rule).
 */
export const ACTIVITIES: Readonly<Record<string, ActivityKind & { op: string }>> = {
  // Users, tags, policies, private keys, OAuth, organization settings and deletions (admin/).
  ...ADMIN_ACTIVITIES,
  ACTIVITY_TYPE_CREATE_SUB_ORGANIZATION_V7: {
    op: 'create_sub_organization',
    intentKey: 'createSubOrganizationIntentV7',
    resultKey: 'createSubOrganizationResultV7',
    run: runCreateSubOrganization,
  },
  ACTIVITY_TYPE_CREATE_SUB_ORGANIZATION_V8: {
    op: 'create_sub_organization',
    intentKey: 'createSubOrganizationIntentV8',
    resultKey: 'createSubOrganizationResultV8',
    run: runCreateSubOrganization,
  },
  ACTIVITY_TYPE_CREATE_WALLET: {
    op: 'create_wallet',
    intentKey: 'createWalletIntent',
    resultKey: 'createWalletResult',
    async run(params, context) {
      const { walletName, accounts, mnemonicLength } = parse(
        z.object({ walletName: z.string().min(1).max(256), accounts: z.array(accountParams), mnemonicLength: z.number().int().optional() }),
        params,
      )
      return await createWallet(context, context.caller.organizationId, walletName, accounts, mnemonicLength)
    },
  },
  ACTIVITY_TYPE_CREATE_WALLET_ACCOUNTS: {
    op: 'create_wallet_accounts',
    intentKey: 'createWalletAccountsIntent',
    resultKey: 'createWalletAccountsResult',
    async run(params, context) {
      const { walletId, accounts } = parse(z.object({ walletId: z.string(), accounts: z.array(accountParams).min(1) }), params)
      const { db, masterKey, caller, now } = context
      const wallet = await walletOf(db, caller.organizationId, walletId)
      const mnemonic = open(masterKey, wallet.id, wallet.sealed_mnemonic)
      const existing = new Set((await db.accountsOfWallet(wallet.id)).map((account) => account.path))
      const derived = deriveAccounts(mnemonic, accounts)
      const taken = derived.find((account) => existing.has(account.path))
      if (taken) {
        for (const account of derived) account.privateKey.fill(0)
        throw new KmsError(GrpcCode.alreadyExists, `wallet ${walletId} already has an account at ${taken.path}`)
      }
      await insertAccounts(context, wallet.id, caller.organizationId, derived, now())
      return { addresses: derived.map((account) => account.address) }
    },
  },
  ACTIVITY_TYPE_CREATE_API_KEYS_V2: {
    op: 'create_api_keys',
    intentKey: 'createApiKeysIntentV2',
    resultKey: 'createApiKeysResult',
    async run(params, context) {
      const { userId, apiKeys } = parse(z.object({ userId: z.string(), apiKeys: z.array(apiKeyParams).min(1) }), params)
      const { db, caller, now } = context
      if (!(await db.user(userId, caller.organizationId))) throw notFound(`user ${userId} not found in organization ${caller.organizationId}`)
      const apiKeyIds: string[] = []
      for (const key of apiKeys) apiKeyIds.push(await insertApiKey(db, userId, caller.organizationId, key, now()))
      return { apiKeyIds }
    },
  },
  ACTIVITY_TYPE_CREATE_READ_WRITE_SESSION_V2: {
    op: 'create_read_write_session',
    intentKey: 'createReadWriteSessionIntentV2',
    resultKey: 'createReadWriteSessionResultV2',
    async run(params, context) {
      const input = parse(
        z.object({
          targetPublicKey,
          userId: z.string().optional(),
          apiKeyName: z.string().min(1).max(256).optional(),
          expirationSeconds: z.string().regex(/^\d+$/).optional(),
        }),
        params,
      )
      const { db, caller } = context
      const userId = input.userId ?? (caller.homeOrganizationId === caller.organizationId ? caller.userId : undefined)
      const user = userId ? await db.user(userId, caller.organizationId) : undefined
      if (!user) throw notFound(`user ${String(userId)} not found in organization ${caller.organizationId}`)
      const organization = (await db.organization(caller.organizationId))!
      // A fresh P-256 key for the session, handed over only inside the bundle.
      const credential = await prepareCredential(input.targetPublicKey)
      const bundle = credential.credentialBundle
      const apiKeyId = await registerCredential(context, credential, {
        userId: user.id,
        credentialType: 'CREDENTIAL_TYPE_READ_WRITE_SESSION_KEY_P256',
        name: input.apiKeyName,
        expirationSeconds: input.expirationSeconds,
      })
      return { organizationId: organization.id, organizationName: organization.name, userId: user.id, username: user.name, apiKeyId, credentialBundle: bundle }
    },
  },
  ACTIVITY_TYPE_EMAIL_AUTH_V3: {
    op: 'email_auth',
    intentKey: 'emailAuthIntentV3',
    resultKey: 'emailAuthResult',
    async run(params, context) {
      const input = parse(
        z.object({
          email: z.email(),
          targetPublicKey,
          apiKeyName: z.string().min(1).max(256).optional(),
          expirationSeconds: z.string().regex(/^\d+$/).optional(),
          emailCustomization: z.object({ appName: z.string().min(1), magicLinkTemplate: z.string().optional() }).optional(),
        }),
        params,
      )
      const user = await userByEmail(context, input.email)
      const credential = await prepareCredential(input.targetPublicKey)
      const bundle = credential.credentialBundle
      const apiKeyId = await registerCredential(context, credential, {
        userId: user.id,
        credentialType: 'CREDENTIAL_TYPE_EMAIL_AUTH_KEY_P256',
        name: input.apiKeyName,
        expirationSeconds: input.expirationSeconds,
      })
      const appName = input.emailCustomization?.appName ?? 'your app'
      const link = input.emailCustomization?.magicLinkTemplate?.replace('%s', encodeURIComponent(bundle))
      await context.mailer.send({
        to: input.email,
        subject: `Sign in to ${appName}`,
        text: `Your sign-in credential for ${appName}:\n\n${link ?? bundle}\n\nIt works for ${Number(input.expirationSeconds ?? DEFAULT_SESSION_SECONDS) / 60} minutes.`,
        html: `<p>Your sign-in credential for ${appName}:</p><p>${link ? `<a href="${link}">Sign in</a>` : `<code>${bundle}</code>`}</p>`,
      })
      // The bundle travels by email only.
      return { userId: user.id, apiKeyId }
    },
  },
  ACTIVITY_TYPE_INIT_USER_EMAIL_RECOVERY_V2: {
    op: 'init_user_email_recovery',
    intentKey: 'initUserEmailRecoveryIntentV2',
    resultKey: 'initUserEmailRecoveryResult',
    async run(params, context) {
      const input = parse(
        z.object({
          email: z.email(),
          targetPublicKey,
          expirationSeconds: z.string().regex(/^\d+$/).optional(),
          emailCustomization: z.object({ appName: z.string().min(1) }).optional(),
        }),
        params,
      )
      const user = await userByEmail(context, input.email)
      const seconds = Math.min(Number(input.expirationSeconds ?? RECOVERY_CODE_SECONDS), RECOVERY_CODE_SECONDS)
      const credential = await prepareCredential(input.targetPublicKey)
      await registerCredential(context, credential, {
        userId: user.id,
        credentialType: 'CREDENTIAL_TYPE_RECOVER_USER_KEY_P256',
        name: undefined,
        expirationSeconds: String(seconds),
      })
      const appName = input.emailCustomization?.appName ?? 'your app'
      await context.mailer.send({
        to: input.email,
        subject: `Recover your ${appName} account`,
        text: `Your recovery credential for ${appName}:\n\n${credential.credentialBundle}\n\nIt works for ${Math.round(seconds / 60)} minutes. If you did not ask to recover your account, ignore this email.`,
        html: `<p>Your recovery credential for ${appName}:</p><p><code>${credential.credentialBundle}</code></p><p>It works for ${Math.round(seconds / 60)} minutes.</p>`,
      })
      return { userId: user.id }
    },
  },
  ACTIVITY_TYPE_RECOVER_USER: {
    op: 'recover_user',
    intentKey: 'recoverUserIntent',
    resultKey: 'recoverUserResult',
    async run(params, context) {
      const input = parse(z.object({ userId: z.string().min(1), authenticator: authenticatorParams }), params)
      const { db, caller, now } = context
      if (caller.userId !== input.userId && caller.homeOrganizationId === caller.organizationId)
        throw new KmsError(GrpcCode.permissionDenied, 'a user can only recover their own account')
      if (!(await db.user(input.userId, caller.organizationId))) throw notFound(`user ${input.userId} not found in organization ${caller.organizationId}`)
      const passkey = await verifyRegistration(input.authenticator, context.webauthn)
      if (await db.authenticatorByCredential(passkey.credentialId))
        throw new KmsError(GrpcCode.alreadyExists, `credential ${passkey.credentialId} is already registered`)
      const id = await insertAuthenticator(db, input.userId, caller.organizationId, input.authenticator, passkey, now())
      return { authenticatorId: [id] }
    },
  },
  ACTIVITY_TYPE_INIT_OTP_AUTH_V3: {
    op: 'init_otp_auth',
    intentKey: 'initOtpAuthIntentV3',
    resultKey: 'initOtpAuthResultV2',
    async run(params, context) {
      const input = parse(
        z.object({
          otpType: z.literal('OTP_TYPE_EMAIL', 'only OTP_TYPE_EMAIL is supported'),
          contact: z.email(),
          otpLength: z.number().int().min(6).max(9).optional(),
          appName: z.string().min(1).max(128),
          alphanumeric: z.boolean().optional(),
          expirationSeconds: z.string().regex(/^\d+$/).optional(),
        }),
        params,
      )
      const user = await userByEmail(context, input.contact)
      const otpId = randomUUID()
      const code = newCode(input.otpLength ?? 6, input.alphanumeric ?? false)
      const seconds = Number(input.expirationSeconds ?? OTP_DEFAULT_SECONDS)
      const at = context.now()
      await context.db.insertOtp({
        id: otpId,
        organization_id: context.caller.organizationId,
        user_id: user.id,
        code_hash: hashCode(otpId, code).toString('hex'),
        expires_at: at + seconds * 1000,
        created_at: at,
      })
      await context.mailer.send({
        to: input.contact,
        subject: `${code} is your ${input.appName} code`,
        text: `Your ${input.appName} sign-in code is ${code}. It expires in ${Math.round(seconds / 60)} minutes.`,
        html: `<p>Your ${input.appName} sign-in code is <strong>${code}</strong>.</p><p>It expires in ${Math.round(seconds / 60)} minutes.</p>`,
      })
      return { otpId }
    },
  },
  ACTIVITY_TYPE_OTP_AUTH: {
    op: 'otp_auth',
    intentKey: 'otpAuthIntent',
    resultKey: 'otpAuthResult',
    async run(params, context) {
      const input = parse(
        z.object({
          otpId: z.string().min(1),
          otpCode: z.string().min(1).max(16),
          targetPublicKey,
          apiKeyName: z.string().min(1).max(256).optional(),
          expirationSeconds: z.string().regex(/^\d+$/).optional(),
        }),
        params,
      )
      const { db, caller, now } = context
      const otp = await db.otp(input.otpId, caller.organizationId)
      if (!otp) throw notFound(`otp ${input.otpId} not found`)
      if (otp.used) throw new KmsError(GrpcCode.failedPrecondition, 'this code has already been used')
      if (otp.expires_at <= now()) throw new KmsError(GrpcCode.failedPrecondition, 'this code has expired')
      if (otp.attempts >= OTP_MAX_ATTEMPTS) throw new KmsError(GrpcCode.resourceExhausted, 'too many wrong codes: request a new one')
      if (!timingSafeEqual(hashCode(otp.id, input.otpCode.toUpperCase()), Buffer.from(otp.code_hash, 'hex'))) {
        // The one write a refused request makes: wrong guesses are counted.
        await db.otpAttempt(otp.id)
        const left = OTP_MAX_ATTEMPTS - otp.attempts - 1
        throw keepingWrites(
          new KmsError(
            GrpcCode.invalidArgument,
            left > 0 ? `invalid code: ${left} attempt${left === 1 ? '' : 's'} left` : 'invalid code: no attempts left, request a new one',
          ),
        )
      }
      const credential = await prepareCredential(input.targetPublicKey)
      // Marked used only if still unused: two right answers racing redeem the code once.
      if (!(await db.otpUsed(otp.id))) throw new KmsError(GrpcCode.failedPrecondition, 'this code has already been used')
      const apiKeyId = await registerCredential(context, credential, {
        userId: otp.user_id,
        credentialType: 'CREDENTIAL_TYPE_OTP_AUTH_KEY_P256',
        name: input.apiKeyName,
        expirationSeconds: input.expirationSeconds,
      })
      return { userId: otp.user_id, apiKeyId, credentialBundle: credential.credentialBundle }
    },
  },
  ACTIVITY_TYPE_STAMP_LOGIN: {
    op: 'stamp_login',
    intentKey: 'stampLoginIntent',
    resultKey: 'stampLoginResult',
    async run(params, context) {
      const input = parse(
        z.object({
          publicKey: z.string().regex(/^0[23][0-9a-f]{64}$/, 'must be a compressed P-256 public key in lowercase hex'),
          expirationSeconds: z.string().regex(/^\d+$/).optional(),
          invalidateExisting: z.boolean().optional(),
        }),
        params,
      )
      const { db, caller, now } = context
      if (caller.homeOrganizationId !== caller.organizationId)
        throw new KmsError(GrpcCode.permissionDenied, 'stamp_login signs in a user of this organization: stamp it with their own passkey or key')
      const seconds = Number(input.expirationSeconds ?? DEFAULT_SESSION_SECONDS)
      await insertApiKey(
        db,
        caller.userId,
        caller.organizationId,
        { apiKeyName: `login ${new Date(now()).toISOString()}`, publicKey: input.publicKey, expirationSeconds: String(seconds) },
        now(),
        'CREDENTIAL_TYPE_LOGIN',
      )
      // The session JWT the browser SDKs keep; signed like the hosted notarizer's (ES256 over a double SHA-256).
      const claims = {
        exp: Math.floor(now() / 1000) + seconds,
        public_key: input.publicKey,
        session_type: 'SESSION_TYPE_READ_WRITE',
        user_id: caller.userId,
        organization_id: caller.organizationId,
      }
      return { session: sessionJwt(claims, context.signerPrivateKey) }
    },
  },
  ACTIVITY_TYPE_CREATE_AUTHENTICATORS_V2: {
    op: 'create_authenticators',
    intentKey: 'createAuthenticatorsIntentV2',
    resultKey: 'createAuthenticatorsResult',
    async run(params, context) {
      const input = parse(z.object({ userId: z.string().min(1), authenticators: z.array(authenticatorParams).min(1) }), params)
      const { db, caller, now } = context
      if (!(await db.user(input.userId, caller.organizationId))) throw notFound(`user ${input.userId} not found in organization ${caller.organizationId}`)
      const verified = await Promise.all(
        input.authenticators.map(async (authenticator) => ({ authenticator, verified: await verifyRegistration(authenticator, context.webauthn) })),
      )
      for (const { verified: passkey } of verified)
        if (await db.authenticatorByCredential(passkey.credentialId))
          throw new KmsError(GrpcCode.alreadyExists, `credential ${passkey.credentialId} is already registered`)
      const authenticatorIds: string[] = []
      for (const { authenticator, verified: passkey } of verified)
        authenticatorIds.push(await insertAuthenticator(db, input.userId, caller.organizationId, authenticator, passkey, now()))
      return { authenticatorIds }
    },
  },
  ACTIVITY_TYPE_INIT_IMPORT_WALLET: {
    op: 'init_import_wallet',
    intentKey: 'initImportWalletIntent',
    resultKey: 'initImportWalletResult',
    async run(params, context) {
      const { userId } = parse(z.object({ userId: z.string().min(1) }), params)
      const { db, caller, masterKey, now, signerPrivateKey } = context
      if (!(await db.user(userId, caller.organizationId))) throw notFound(`user ${userId} not found in organization ${caller.organizationId}`)
      // A fresh target key per import, kept sealed until the import arrives.
      const target = p256.utils.randomPrivateKey()
      await db.upsertImportTarget({
        user_id: userId,
        organization_id: caller.organizationId,
        sealed_private_key: seal(masterKey, `import:${userId}`, Buffer.from(target).toString('hex')),
        created_at: now(),
      })
      const targetPublic = Buffer.from(p256.getPublicKey(target, false)).toString('hex')
      return { importBundle: signBundle(signerPrivateKey, { organizationId: caller.organizationId, userId, targetPublic }) }
    },
  },
  ACTIVITY_TYPE_IMPORT_WALLET: {
    op: 'import_wallet',
    intentKey: 'importWalletIntent',
    resultKey: 'importWalletResult',
    async run(params, context) {
      const input = parse(
        z.object({ userId: z.string().min(1), walletName: z.string().min(1).max(256), encryptedBundle: z.string().min(1), accounts: z.array(accountParams) }),
        params,
      )
      const { db, caller, masterKey, now } = context
      const target = await db.importTarget(input.userId, caller.organizationId)
      if (!target) throw new KmsError(GrpcCode.failedPrecondition, 'no import in progress for this user: call init_import_wallet first')
      let envelope: { encappedPublic?: unknown; ciphertext?: unknown }
      try {
        envelope = JSON.parse(input.encryptedBundle)
      } catch {
        throw invalid('encryptedBundle is not JSON')
      }
      if (typeof envelope.encappedPublic !== 'string' || typeof envelope.ciphertext !== 'string')
        throw invalid('encryptedBundle must hold encappedPublic and ciphertext')
      const plaintext = await hpkeOpen(
        open(masterKey, `import:${input.userId}`, target.sealed_private_key),
        Buffer.from(envelope.encappedPublic, 'hex'),
        Buffer.from(envelope.ciphertext, 'hex'),
      )
      const text = new TextDecoder().decode(plaintext)
      if (text.includes('\n--PASS--\n')) throw invalid('wallets with a BIP-39 passphrase cannot be imported here')
      const mnemonic = text.trim().split(/\s+/).join(' ')
      if (!validateMnemonic(mnemonic, wordlist)) throw invalid('the imported secret is not a valid BIP-39 mnemonic')
      if (await db.walletByName(caller.organizationId, input.walletName))
        throw new KmsError(GrpcCode.alreadyExists, `a wallet named "${input.walletName}" already exists`)
      const derived = deriveAccounts(mnemonic, input.accounts)
      const walletId = randomUUID()
      const at = now()
      await db.insertWallet({
        id: walletId,
        organization_id: caller.organizationId,
        name: input.walletName,
        sealed_mnemonic: seal(masterKey, walletId, mnemonic),
        created_at: at,
        exported: 0,
        imported: 1,
      })
      await db.markImported(walletId)
      await insertAccounts(context, walletId, caller.organizationId, derived, at)
      // One import per init: the target key is spent.
      await db.deleteImportTarget(input.userId)
      return { walletId, addresses: derived.map((account) => account.address) }
    },
  },
  ACTIVITY_TYPE_EXPORT_WALLET: {
    op: 'export_wallet',
    intentKey: 'exportWalletIntent',
    resultKey: 'exportWalletResult',
    async run(params, context) {
      const input = parse(z.object({ walletId: z.string().min(1), targetPublicKey, language: z.string().optional() }), params)
      const { db, masterKey, caller, signerPrivateKey } = context
      const wallet = await walletOf(db, caller.organizationId, input.walletId)
      const mnemonic = open(masterKey, wallet.id, wallet.sealed_mnemonic)
      const bundle = await exportBundle({
        signerPrivateKey,
        organizationId: caller.organizationId,
        targetPublicKey: input.targetPublicKey,
        plaintext: new TextEncoder().encode(mnemonic),
      })
      await db.markExported(wallet.id)
      return { walletId: wallet.id, exportBundle: bundle }
    },
  },
  ACTIVITY_TYPE_EXPORT_WALLET_ACCOUNT: {
    op: 'export_wallet_account',
    intentKey: 'exportWalletAccountIntent',
    resultKey: 'exportWalletAccountResult',
    async run(params, context) {
      const input = parse(z.object({ address: z.string().min(1), targetPublicKey }), params)
      const { bundle, walletId } = await withAccountKey(context, input.address, async (privateKey, account) => ({
        walletId: account.wallet_id,
        bundle: await exportBundle({
          signerPrivateKey: context.signerPrivateKey,
          organizationId: context.caller.organizationId,
          targetPublicKey: input.targetPublicKey,
          plaintext: privateKey,
        }),
      }))
      await context.db.markExported(walletId)
      return { address: input.address, exportBundle: bundle }
    },
  },
  ACTIVITY_TYPE_SIGN_RAW_PAYLOAD_V2: {
    op: 'sign_raw_payload',
    intentKey: 'signRawPayloadIntentV2',
    resultKey: 'signRawPayloadResult',
    async run(params, context) {
      const { signWith, payload, encoding, hashFunction } = parse(signRawPayload, params)
      return await withSigningKey(context, signWith, (privateKey) => signDigest(privateKey, digestOf(payload, encoding, hashFunction)))
    },
  },
  ACTIVITY_TYPE_SIGN_RAW_PAYLOADS: {
    op: 'sign_raw_payloads',
    intentKey: 'signRawPayloadsIntent',
    resultKey: 'signRawPayloadsResult',
    async run(params, context) {
      const { signWith, payloads, encoding, hashFunction } = parse(
        z.object({ signWith: z.string().min(1), payloads: z.array(z.string()).min(1).max(100), encoding: z.string(), hashFunction: z.string() }),
        params,
      )
      return {
        signatures: await withSigningKey(context, signWith, (privateKey) =>
          payloads.map((payload) => signDigest(privateKey, digestOf(payload, encoding, hashFunction))),
        ),
      }
    },
  },
  ACTIVITY_TYPE_SIGN_TRANSACTION_V2: {
    op: 'sign_transaction',
    intentKey: 'signTransactionIntentV2',
    resultKey: 'signTransactionResult',
    async run(params, context) {
      const { signWith, unsignedTransaction, type } = parse(
        z.object({ signWith: z.string().min(1), unsignedTransaction: z.string().min(1), type: z.literal('TRANSACTION_TYPE_ETHEREUM') }),
        params,
      )
      void type
      return { signedTransaction: await withSigningKey(context, signWith, (privateKey) => signTransaction(privateKey, unsignedTransaction)) }
    },
  },
}

async function runCreateSubOrganization(params: unknown, context: ActivityContext) {
  const input = parse(createSubOrganization, params)
  const { db, caller, now } = context
  // Every passkey is verified before anything is written.
  const passkeys = await Promise.all(
    input.rootUsers.map((user) =>
      Promise.all(user.authenticators.map(async (authenticator) => ({ authenticator, verified: await verifyRegistration(authenticator, context.webauthn) }))),
    ),
  )
  for (const { verified } of passkeys.flat())
    if (await db.authenticatorByCredential(verified.credentialId))
      throw new KmsError(GrpcCode.alreadyExists, `credential ${verified.credentialId} is already registered`)
  const parent = await db.organization(caller.organizationId)
  if (!parent) throw notFound(`organization ${caller.organizationId} not found`)
  if (parent.parent_id) throw new KmsError(GrpcCode.permissionDenied, 'a sub-organization cannot create sub-organizations')
  if (input.rootQuorumThreshold > input.rootUsers.length) throw invalid('rootQuorumThreshold is larger than the number of root users')
  const subOrganizationId = randomUUID()
  const at = now()
  await db.insertOrganization({
    id: subOrganizationId,
    name: input.subOrganizationName,
    parent_id: parent.id,
    root_quorum_threshold: input.rootQuorumThreshold,
    created_at: at,
  })
  const rootUserIds: string[] = []
  for (const [index, user] of input.rootUsers.entries()) {
    const userId = randomUUID()
    await db.insertUser({ id: userId, organization_id: subOrganizationId, name: user.userName, email: user.userEmail ?? null, created_at: at })
    for (const key of user.apiKeys) await insertApiKey(db, userId, subOrganizationId, key, at)
    for (const { authenticator, verified } of passkeys[index]!) await insertAuthenticator(db, userId, subOrganizationId, authenticator, verified, at)
    rootUserIds.push(userId)
  }
  const wallet = input.wallet
    ? await createWallet(context, subOrganizationId, input.wallet.walletName, input.wallet.accounts, input.wallet.mnemonicLength)
    : undefined
  return { subOrganizationId, rootUserIds, ...(wallet ? { wallet } : {}) }
}
/** Proto int64 timestamps travel as strings. */
export const timestamp = (ms: number) => ({ seconds: String(Math.floor(ms / 1000)), nanos: String((ms % 1000) * 1_000_000) })
