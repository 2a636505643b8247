import { randomBytes } from 'node:crypto'
import { mkdir, readFile, rename, writeFile } from 'node:fs/promises'
import { join, resolve } from 'node:path'
import { createKms, type FramesOptions, generateApiKeyPair, type OidcIssuer as OidcIssuerTrust, type WebauthnConfig } from '@latchkey/kms'
import { createRelay, type RelayStore, redisStore, sqliteStore } from '@latchkey/relay'
import { createAppServer, OAUTH_CALLBACK_PATH, PAYMASTER_PATH, type PaymasterPolicyInput } from '@latchkey/server'
import { anvil } from './anvil.js'
import { buildDemo, buildWallet, repoRoot } from './buildDemo.js'
import { type BundlerInstances, bundlerInstances } from './bundlers.js'
import { deployEntryPoint, ENTRY_POINT_ADDRESS } from './entryPoint.js'
import { BATCH_EXECUTOR_ADDRESS, deployBatchExecutor } from './executor.js'
import { DevnetError, defineInstance, type Instance, PortInUseError } from './instance.js'
import { OIDC_PROVIDERS, type OidcIssuer, type OidcProviderName, oidcInstance, oidcIssuerUrl } from './oidc.js'
import { deployPaymasters, loadPaymasters } from './paymasters.js'
import { demoSponsorshipPolicy } from './sponsorship.js'
import { staticServer } from './static.js'
import { deployTestToken, TEST_TOKEN_ADDRESS } from './token.js'

/** The demo app's name: the backend's, and the one the consent frame says sponsors its gas. */
const DEMO_APP_NAME = 'Latchkey Demo'

export type StartStackOptions = {
  /**
   * Ports to use. Default: the environment (`LATCHKEY_CHAIN_A_PORT`, `LATCHKEY_CHAIN_B_PORT`,
   * `LATCHKEY_RELAY_PORT`, `LATCHKEY_KMS_PORT`, `LATCHKEY_KMS_FRAMES_PORT`, `LATCHKEY_SERVER_PORT`,
   * `LATCHKEY_DEMO_PORT`, `LATCHKEY_WALLET_PORT`, `LATCHKEY_OIDC_PORT`, `LATCHKEY_BUNDLER_A_PORT`,
   * `LATCHKEY_BUNDLER_B_PORT`), else 8545, 8546, 5555, 8090, 8091, 8787, 5173, 5174, 8092, 4337 and 4338.
   */
  ports?: {
    chainA?: number
    chainB?: number
    relay?: number
    kms?: number
    frames?: number
    server?: number
    demo?: number
    wallet?: number
    oidc?: number
    bundlerA?: number
    bundlerB?: number
  }
  /** Run an ERC-4337 bundler (Alto) per chain. Default: `true`. */
  bundlers?: boolean
  /** Run the WalletConnect relay. Default: `true`. */
  relay?: boolean
  /** Run the key-management service, and the app backend that uses it. Default: `true`. */
  kms?: boolean
  /**
   * Build and serve the demo app, and with it the reference wallet (apps/wallet, the "phone" that
   * pairs over the relay; served only when the relay runs). Default: `true`.
   */
  demo?: boolean
  /** Build the apps before serving them; `false` serves what is already in `demoDir` and `walletDir`. Default: `true`. */
  build?: boolean
  /** Where the demo is built to and served from. Default: `<stateDir>/demo`. */
  demoDir?: string
  /** Where the reference wallet is built to and served from. Default: `<stateDir>/wallet`. */
  walletDir?: string
  /** Where `dev.json` is written. Default: `LATCHKEY_STATE_DIR`, else `<repo>/.latchkey`. */
  stateDir?: string
  /** Environment to read the defaults from. Default: `process.env`. */
  env?: Readonly<Record<string, string | undefined>>
}

export type StackChain = { readonly id: number; readonly name: string; readonly rpcUrl: string }

/** The stack's URLs; `demo` exists when the demo is served, `wallet` when the demo and the relay are. */
export type StackUrls<demo extends boolean = boolean> = {
  readonly chainA: string
  readonly chainB: string
  readonly relay?: string
  readonly kms?: string
  /** The kms frames' origin (pages at /auth, /recovery, /export, /import). */
  readonly frames?: string
  readonly server?: string
  readonly wallet?: string
  /** The local OpenID provider (with the backend): it plays Google and Apple. */
  readonly oidc?: string
} & (demo extends true ? { readonly demo: string } : { readonly demo?: undefined })

/**
 * The kms's parent organization (the app backend's) and its API key pair, and the key that signs
 * the kms's bundles: what a backend or a test needs to act as the app.
 */
export type KmsCredentials = {
  readonly parentOrganizationId: string
  readonly apiPublicKey: string
  readonly apiPrivateKey: string
  /** Uncompressed hex; pin it as `dangerouslyOverrideSignerPublicKey`. */
  readonly signerPublicKey: string
}

/**
 * Contents of `.latchkey/dev.json`, for tests and tools to find the running stack. `pid` is the
 * process that runs the stack, so a file left by a stack that is gone can be recognised.
 */
export type DevJson = {
  readonly version: 1
  readonly startedAt: string
  readonly pid: number
  readonly urls: StackUrls
  readonly chains: readonly StackChain[]
  readonly kms?: KmsCredentials
  /** The social sign-in issuers the local OpenID provider plays, with the demo's client id. */
  readonly oidc?: Readonly<Record<OidcProviderName, OidcIssuer>>
  /** Contracts deployed on both chains, at the same address on each. */
  readonly contracts: StackContracts
  /** The backend's admin API token (`Authorization: Bearer …` on `/admin/*`), new on each start. */
  readonly adminToken?: string
  /** ERC-4337 EntryPoint v0.8, at its canonical address on both chains. */
  readonly entryPoint: `0x${string}`
  /** The ERC-4337 bundler of each chain, by chain id, when the bundlers run. */
  readonly bundlers?: Readonly<Record<number, string>>
  /** The app backend's ERC-7677 paymaster service (`pm_getPaymasterStubData`, `pm_getPaymasterData`), when the backend runs. */
  readonly paymaster?: string
}

/** Contracts `startStack` deploys on both chains. */
export type StackContracts = {
  /** contracts/BatchExecutor.sol, the EIP-7702 delegate of embedded accounts (CREATE2, salt 0). */
  readonly batchExecutor: `0x${string}`
  /** contracts/TestToken.sol, the demo's ERC-20 ("Test Token", TKN, 18 decimals; anyone may mint): CREATE2, salt 0. */
  readonly token: `0x${string}`
  /**
   * contracts/SponsorPaymaster.sol: pays the gas of UserOperations the paymaster service signed, from
   * its EntryPoint deposit (100 ETH each start). CREATE2, salt 0; the address follows from the
   * signer and owner keys kept in `<stateDir>/paymasters.json`.
   */
  readonly sponsorPaymaster: `0x${string}`
  /** contracts/TokenPaymaster.sol: pays the gas and charges the account in TKN at the service's signed price. CREATE2, like the sponsor paymaster. */
  readonly tokenPaymaster: `0x${string}`
  /** The account that prefunds a first operation paid in TKN (holds TKN, approved the token paymaster); its key is in `paymasters.json`. */
  readonly paymasterGuarantor: `0x${string}`
}

/** The paymasters of one chain (the same addresses on both). */
export type StackPaymasterContracts = { readonly sponsor: `0x${string}`; readonly token: `0x${string}` }

export type Stack<demo extends boolean = boolean> = {
  readonly urls: StackUrls<demo>
  readonly chains: readonly StackChain[]
  /** Path of the `dev.json` this stack wrote. */
  readonly devJson: string
  /** Every service, in start order. */
  readonly instances: readonly Instance[]
  /** The kms's parent organization and keys, when the kms runs. */
  readonly kms?: KmsCredentials
  /** Contracts deployed on both chains. */
  readonly contracts: StackContracts
  /** ERC-4337 EntryPoint v0.8, at its canonical address on both chains. */
  readonly entryPoint: `0x${string}`
  /** The ERC-4337 bundler of each chain, by chain id, when the bundlers run. */
  readonly bundlers?: Readonly<Record<number, string>>
  /** The app backend's ERC-7677 paymaster service (`pm_getPaymasterStubData`, `pm_getPaymasterData`), when the backend runs. */
  readonly paymaster?: string
  /** The key both paymasters accept signatures from: what the paymaster service signs with. Kept in `<stateDir>/paymasters.json`. */
  readonly paymasterSigner: { readonly privateKey: `0x${string}`; readonly address: `0x${string}` }
  /** The guarantor the paymaster service names in token quotes for an account's first operation. */
  readonly guarantor: `0x${string}`
  /** The paymasters of each chain, by chain id. */
  readonly paymasters: Readonly<Record<number, StackPaymasterContracts>>
  /** Stops every service, in reverse start order. Files (dev.json, the demo build) stay. */
  stop(): Promise<void>
}

/** Whether a stack started with `options` serves the demo: known when `demo` is a literal or absent. */
type DemoFlag<options> = options extends { demo: false } ? false : options extends { demo: true } ? true : 'demo' extends keyof options ? boolean : true

export const defaultPorts = {
  chainA: 8545,
  chainB: 8546,
  relay: 5555,
  kms: 8090,
  frames: 8091,
  server: 8787,
  demo: 5173,
  wallet: 5174,
  oidc: 8092,
  bundlerA: 4337,
  bundlerB: 4338,
} as const

/** The client id the demo uses with the local Google and Apple issuers. */
export const DEMO_OAUTH_CLIENT_ID = 'latchkey-demo'

/** The backend's per-IP limits on the local stack, where every browser shares 127.0.0.1. */
const DEV_LIMITS_PER_IP = { signIns: 1000, nonces: 1000, verifies: 1000, paymaster: 1000 } as const

/**
 * Starts the local stack: chain A (31337) and chain B (31338) on anvil, and the demo app built
 * for those chains and served as static files; then writes `dev.json`. If any service fails to
 * start, the ones already started are stopped before the error is rethrown.
 *
 * @example
 * const stack = await startStack({ ports: { chainA: await getFreePort(), chainB: await getFreePort() }, demo: false })
 * console.log(stack.urls.chainA)
 * await stack.stop()
 */
// biome-ignore lint/complexity/noBannedTypes: {} is the 'no options given' default that DemoFlag reads
export async function startStack<const options extends StartStackOptions = {}>(options?: options): Promise<Stack<DemoFlag<options>>> {
  const env = options?.env ?? process.env
  const ports = {
    chainA: options?.ports?.chainA ?? portFromEnv(env, 'LATCHKEY_CHAIN_A_PORT', defaultPorts.chainA),
    chainB: options?.ports?.chainB ?? portFromEnv(env, 'LATCHKEY_CHAIN_B_PORT', defaultPorts.chainB),
    relay: options?.ports?.relay ?? portFromEnv(env, 'LATCHKEY_RELAY_PORT', defaultPorts.relay),
    kms: options?.ports?.kms ?? portFromEnv(env, 'LATCHKEY_KMS_PORT', defaultPorts.kms),
    frames: options?.ports?.frames ?? portFromEnv(env, 'LATCHKEY_KMS_FRAMES_PORT', defaultPorts.frames),
    server: options?.ports?.server ?? portFromEnv(env, 'LATCHKEY_SERVER_PORT', defaultPorts.server),
    demo: options?.ports?.demo ?? portFromEnv(env, 'LATCHKEY_DEMO_PORT', defaultPorts.demo),
    wallet: options?.ports?.wallet ?? portFromEnv(env, 'LATCHKEY_WALLET_PORT', defaultPorts.wallet),
    oidc: options?.ports?.oidc ?? portFromEnv(env, 'LATCHKEY_OIDC_PORT', defaultPorts.oidc),
    bundlerA: options?.ports?.bundlerA ?? portFromEnv(env, 'LATCHKEY_BUNDLER_A_PORT', defaultPorts.bundlerA),
    bundlerB: options?.ports?.bundlerB ?? portFromEnv(env, 'LATCHKEY_BUNDLER_B_PORT', defaultPorts.bundlerB),
  }
  const withDemo = options?.demo ?? true
  const stateDir = resolve(options?.stateDir ?? env['LATCHKEY_STATE_DIR'] ?? join(repoRoot, '.latchkey'))
  const demoDir = resolve(options?.demoDir ?? join(stateDir, 'demo'))
  const walletDir = resolve(options?.walletDir ?? join(stateDir, 'wallet'))

  const devJson = join(stateDir, 'dev.json')
  // Created first, before the demo build makes it as a side effect with the default mode: dev.json
  // will carry the kms parent organization's API key, so only this user may read the directory.
  await mkdir(stateDir, { recursive: true, mode: 0o700 })
  // The paymasters' keys, kept in the state directory so their addresses survive restarts.
  const paymasterKeys = await loadPaymasters(stateDir)
  // Deterministic (CREATE2): known before the chains run, so the demo build can bake it in.
  const contracts: StackContracts = {
    batchExecutor: BATCH_EXECUTOR_ADDRESS,
    token: TEST_TOKEN_ADDRESS,
    sponsorPaymaster: paymasterKeys.sponsorPaymaster,
    tokenPaymaster: paymasterKeys.tokenPaymaster,
    paymasterGuarantor: paymasterKeys.guarantor.address,
  }
  const paymasters = { sponsor: paymasterKeys.sponsorPaymaster, token: paymasterKeys.tokenPaymaster }

  const chainA = anvil({ name: 'chain A', port: ports.chainA, chainId: 31337 })
  const chainB = anvil({ name: 'chain B', port: ports.chainB, chainId: 31338 })
  const bundlers: BundlerInstances | undefined = options?.bundlers === false ? undefined : bundlerInstances({ chainA, chainB, ports })
  const relay =
    options?.relay === false
      ? undefined
      : relayInstance(ports.relay, { 'eip155:31337': chainA.url, 'eip155:31338': chainB.url }, env['REDIS_URL'] || join(stateDir, 'relay.db'))
  const demoOrigins = [`http://localhost:${ports.demo}`, `http://127.0.0.1:${ports.demo}`]
  // The frames may be embedded by the demo and the reference wallet.
  const frameParents = [...demoOrigins, `http://localhost:${ports.wallet}`, `http://127.0.0.1:${ports.wallet}`]
  const kms =
    options?.kms === false
      ? undefined
      : kmsInstance(
          ports.kms,
          stateDir,
          { rpIds: ['localhost'], origins: demoOrigins },
          {
            port: ports.frames,
            parentOrigins: frameParents,
            // The consent frame decodes and simulates on the devnet's chains (as dev.json names them);
            // it signs for the kms's one EIP-7702 delegate, the batch executor.
            chains: [
              { id: 31337, rpcUrl: chainA.url },
              { id: 31338, rpcUrl: chainB.url },
            ],
            // Its fee row names these as the app's: "sponsored by Latchkey Demo", or the TKN quote.
            appName: DEMO_APP_NAME,
            paymasters: [31337, 31338].flatMap((chainId) => [
              { chainId, kind: 'sponsor' as const, address: paymasters.sponsor },
              { chainId, kind: 'token' as const, address: paymasters.token },
            ]),
          },
          env['DATABASE_URL'] || undefined,
          // The local provider's issuers, whose ID tokens the kms verifies against their JWKS.
          OIDC_PROVIDERS.map((name) => ({ issuer: oidcIssuerUrl(ports.oidc, name), audiences: [DEMO_OAUTH_CLIENT_ID] })),
        )
  const demo = withDemo ? staticServer({ name: 'demo', root: demoDir, port: ports.demo }) : undefined
  // "Continue with Google / Apple" offline: a real OpenID provider plays both, for the backend.
  const oidc = kms
    ? oidcInstance({
        port: ports.oidc,
        clientId: DEMO_OAUTH_CLIENT_ID,
        // The demo's callback page, and the backend's route where "Apple" posts (form_post).
        redirectUris: [
          ...demoOrigins.map((origin) => `${origin}/oauth/callback`),
          ...[`http://localhost:${ports.server}`, `http://127.0.0.1:${ports.server}`].map((origin) => `${origin}${OAUTH_CALLBACK_PATH}`),
        ],
      })
    : undefined
  // A new one each start: it guards the admin API of this run only (dev.json has it).
  const adminToken = randomBytes(24).toString('hex')
  const serverChains = [
    { id: 31337, rpcUrl: chainA.url },
    { id: 31338, rpcUrl: chainB.url },
  ]
  const server = kms
    ? serverInstance(ports.server, kms, adminToken, stateDir, demoOrigins, serverChains, oidc?.issuers, {
        signerPrivateKey: paymasterKeys.signer.privateKey,
        policy: demoSponsorshipPolicy({ chains: serverChains, paymasters, guarantor: paymasterKeys.guarantor.address, appName: DEMO_APP_NAME }),
      })
    : undefined
  const wallet = withDemo && relay ? staticServer({ name: 'wallet', root: walletDir, port: ports.wallet }) : undefined
  // Later: kms and the app backend join this list.
  const instances: Instance[] = [
    chainA,
    chainB,
    ...(bundlers ? [bundlers.a, bundlers.b] : []),
    ...(relay ? [relay] : []),
    ...(kms ? [kms] : []),
    ...(oidc ? [oidc] : []),
    ...(server ? [server] : []),
    ...(demo ? [demo] : []),
    ...(wallet ? [wallet] : []),
  ]

  const chains: readonly StackChain[] = [
    { id: 31337, name: 'Anvil A', rpcUrl: chainA.url },
    { id: 31338, name: 'Anvil B', rpcUrl: chainB.url },
  ]
  const urls = {
    chainA: chainA.url,
    chainB: chainB.url,
    ...(relay ? { relay: relay.url } : {}),
    ...(kms ? { kms: kms.url, frames: kms.framesUrl } : {}),
    ...(server ? { server: server.url } : {}),
    ...(oidc ? { oidc: oidc.url } : {}),
    ...(demo ? { demo: demo.url } : {}),
    ...(wallet ? { wallet: wallet.url } : {}),
  } as StackUrls<DemoFlag<options>>
  const bundlerUrls = bundlers ? { [chainA.chainId]: bundlers.a.url, [chainB.chainId]: bundlers.b.url } : undefined
  // The backend's ERC-7677 paymaster service, on localhost like the demo's other calls to the backend.
  const paymasterUrl = server ? `http://localhost:${ports.server}${PAYMASTER_PATH}` : undefined

  try {
    // The builds need only the services' URLs, so they run while the services start.
    const build = options?.build ?? true
    // The backend's session cookie is SameSite: the demo (localhost) must call it on localhost too.
    const apps = {
      chainARpc: chainA.url,
      chainBRpc: chainB.url,
      relayUrl: relay?.url,
      serverUrl: server ? `http://localhost:${ports.server}` : undefined,
      batchExecutor: contracts.batchExecutor,
      token: contracts.token,
      bundlerA: bundlers?.a.url,
      bundlerB: bundlers?.b.url,
      paymasterUrl,
      tokenPaymaster: paymasterUrl ? contracts.tokenPaymaster : undefined,
    }
    const results = await Promise.allSettled([
      // One deployer per chain, so its deployments go one after the other. The EntryPoint comes
      // first: the bundler needs it, and starts while the other contracts deploy.
      chainA
        .start()
        .then(() => deployEntryPoint(chainA.url))
        .then(() =>
          Promise.all([
            bundlers?.a.start(),
            deployBatchExecutor(chainA.url)
              .then(() => deployTestToken(chainA.url))
              .then(() => deployPaymasters(chainA.url, paymasterKeys)),
          ]),
        ),
      chainB
        .start()
        .then(() => deployEntryPoint(chainB.url))
        .then(() =>
          Promise.all([
            bundlers?.b.start(),
            deployBatchExecutor(chainB.url)
              .then(() => deployTestToken(chainB.url))
              .then(() => deployPaymasters(chainB.url, paymasterKeys)),
          ]),
        ),
      relay?.start(),
      kms?.start(),
      oidc?.start(),
      demo && build ? buildDemo({ ...apps, outDir: demoDir }) : undefined,
      wallet && build ? buildWallet({ ...apps, outDir: walletDir }) : undefined,
    ])
    const failure = results.find((result) => result.status === 'rejected')
    if (failure) throw failure.reason
    // The backend acts with the kms's parent organization key, known once the kms has started.
    await server?.start()
    await demo?.start()
    await wallet?.start()
    await writeDevJson(devJson, {
      version: 1,
      startedAt: new Date().toISOString(),
      pid: process.pid,
      urls,
      chains,
      ...(kms ? { kms: kms.credentials() } : {}),
      ...(oidc ? { oidc: oidc.issuers } : {}),
      contracts,
      ...(server ? { adminToken } : {}),
      entryPoint: ENTRY_POINT_ADDRESS,
      ...(bundlerUrls ? { bundlers: bundlerUrls } : {}),
      ...(paymasterUrl ? { paymaster: paymasterUrl } : {}),
    })
  } catch (error) {
    await stopAll(instances).catch(() => undefined)
    throw error
  }

  return {
    urls,
    chains,
    devJson,
    instances,
    ...(kms ? { kms: kms.credentials() } : {}),
    contracts,
    entryPoint: ENTRY_POINT_ADDRESS,
    ...(bundlerUrls ? { bundlers: bundlerUrls } : {}),
    ...(paymasterUrl ? { paymaster: paymasterUrl } : {}),
    paymasterSigner: paymasterKeys.signer,
    guarantor: paymasterKeys.guarantor.address,
    paymasters: { [chainA.chainId]: paymasters, [chainB.chainId]: paymasters },
    stop: () => stopAll(instances),
  }
}

async function stopAll(instances: readonly Instance[]): Promise<void> {
  const errors: unknown[] = []
  for (const instance of [...instances].reverse()) {
    try {
      await instance.stop()
    } catch (error) {
      errors.push(error)
    }
  }
  if (errors.length === 1) throw errors[0]
  if (errors.length > 1) throw new AggregateError(errors, `${errors.length} services failed to stop`)
}

async function writeDevJson(path: string, contents: DevJson): Promise<void> {
  const temporary = `${path}.${process.pid}.tmp`
  await writeFile(temporary, `${JSON.stringify(contents, null, 2)}\n`, { mode: 0o600 })
  // Readers never see a half-written file.
  await rename(temporary, path)
}

function portFromEnv(env: Readonly<Record<string, string | undefined>>, name: string, fallback: number): number {
  const value = env[name]
  if (value === undefined || value === '') return fallback
  const port = Number(value)
  if (!/^\d+$/.test(value) || port < 1 || port > 65_535)
    throw new DevnetError(`${name} must be a port number from 1 to 65535, got "${value}"`, { code: 'INVALID_PORT' })
  return port
}

/**
 * Our WalletConnect relay, with its JSON-RPC endpoint in front of the chains and its messages in
 * a SQLite file in the state directory (or in Redis, given a `redis://` URL), so pending messages
 * survive a restart of the stack.
 */
function relayInstance(port: number, rpc: Record<string, string>, database: string): Instance {
  const host = '127.0.0.1'
  let running: { stop(): Promise<void>; store: RelayStore } | undefined
  return defineInstance({
    name: 'relay',
    host,
    port,
    url: `ws://${host}:${port}`,
    async start() {
      // Opened here, not when the stack is described: the state directory exists by now.
      const store = /^rediss?:\/\//.test(database) ? await redisStore(database) : sqliteStore(database)
      const relay = createRelay({ port, host, rpc, store })
      try {
        await relay.start()
      } catch (error) {
        await store.close()
        if ((error as NodeJS.ErrnoException).code === 'EADDRINUSE') throw new PortInUseError({ name: 'relay', host, port })
        throw error
      }
      running = { stop: () => relay.stop(), store }
    },
    async stop() {
      await running?.stop()
      await running?.store.close()
      running = undefined
    },
  })
}

/** What the kms keeps in the state directory between runs (mode 0600): its keys and the parent organization. */
type KmsState = {
  masterKey: string
  signerPrivateKey: string
  parent?: { organizationId: string; apiPublicKey: string; apiPrivateKey: string } | undefined
}

/**
 * The key-management service, with its data in `kms.db` and its master key, signer key and the
 * parent organization's API key pair in `kms.json` (mode 0600) in the state directory: created on
 * the first start, reused after. Passkeys are accepted from the demo's origins.
 */
function kmsInstance(
  port: number,
  stateDir: string,
  webauthn: WebauthnConfig,
  frames: FramesOptions & { port: number },
  databaseUrl: string | undefined,
  oidcIssuers: readonly OidcIssuerTrust[],
): Instance & { credentials(): KmsCredentials; framesUrl: string } {
  const host = '127.0.0.1'
  const statePath = join(stateDir, 'kms.json')
  let running: ReturnType<typeof createKms> | undefined
  let credentials: KmsCredentials | undefined
  const instance = defineInstance({
    name: 'kms',
    host,
    port,
    url: `http://${host}:${port}`,
    async start() {
      const state: KmsState = await readFile(statePath, 'utf8').then(
        (text) => JSON.parse(text) as KmsState,
        () => ({ masterKey: randomBytes(32).toString('hex'), signerPrivateKey: generateApiKeyPair().apiPrivateKey }),
      )
      // DATABASE_URL (postgres://) puts the kms's data in PostgreSQL; otherwise kms.db beside its keys.
      const storage = databaseUrl ? { databaseUrl } : { databasePath: join(stateDir, 'kms.db') }
      const kms = createKms({
        port,
        host,
        ...storage,
        masterKey: Buffer.from(state.masterKey, 'hex'),
        signerPrivateKey: state.signerPrivateKey,
        webauthn,
        oidcIssuers,
        frames,
        // The only contract an embedded wallet's account may delegate to with EIP-7702, and the consent frame's executor.
        eip7702Delegates: [BATCH_EXECUTOR_ADDRESS],
      })
      try {
        await kms.start()
      } catch (error) {
        await kms.stop()
        if ((error as NodeJS.ErrnoException).code === 'EADDRINUSE')
          throw (error as { port?: number }).port === frames.port
            ? new PortInUseError({ name: 'kms frames', host: 'localhost', port: frames.port })
            : new PortInUseError({ name: 'kms', host, port })
        throw error
      }
      // First start, or a deleted kms.db: a parent organization for the app backend.
      if (!state.parent || !(await kms.hasOrganization(state.parent.organizationId))) {
        const keys = generateApiKeyPair()
        const parent = await kms.createParentOrganization({ name: 'Latchkey devnet', userName: 'app backend', publicKey: keys.apiPublicKey })
        state.parent = { organizationId: parent.organizationId, ...keys }
        const temporary = `${statePath}.${process.pid}.tmp`
        await writeFile(temporary, `${JSON.stringify(state, null, 2)}\n`, { mode: 0o600 })
        await rename(temporary, statePath)
      }
      credentials = {
        parentOrganizationId: state.parent.organizationId,
        apiPublicKey: state.parent.apiPublicKey,
        apiPrivateKey: state.parent.apiPrivateKey,
        signerPublicKey: kms.signerPublicKey,
      }
      running = kms
    },
    async stop() {
      await running?.stop()
      running = undefined
    },
  })
  return Object.assign(instance, {
    framesUrl: `http://localhost:${frames.port}`,
    credentials() {
      if (!credentials) throw new DevnetError('the kms has not started', { code: 'NOT_STARTED' })
      return credentials
    },
  })
}

/**
 * The app backend, acting for the kms's parent organization, with its data in `server.db`, the
 * demo's origins allowed, and SIWE signatures verified on `chains`.
 */
function serverInstance(
  port: number,
  kms: ReturnType<typeof kmsInstance>,
  adminToken: string,
  stateDir: string,
  allowedOrigins: readonly string[],
  chains: readonly { id: number; rpcUrl: string }[],
  oauth: Readonly<Record<OidcProviderName, OidcIssuer>> | undefined,
  paymaster: { signerPrivateKey: `0x${string}`; policy: PaymasterPolicyInput },
): Instance {
  const host = '127.0.0.1'
  let running: ReturnType<typeof createAppServer> | undefined
  return defineInstance({
    name: 'server',
    host,
    port,
    url: `http://${host}:${port}`,
    async start() {
      const credentials = kms.credentials()
      const server = createAppServer({
        port,
        host,
        databasePath: join(stateDir, 'server.db'),
        kmsUrl: kms.url,
        framesUrl: kms.framesUrl,
        organizationId: credentials.parentOrganizationId,
        apiPublicKey: credentials.apiPublicKey,
        apiPrivateKey: credentials.apiPrivateKey,
        sessionSignerPublicKey: credentials.signerPublicKey,
        appName: DEMO_APP_NAME,
        allowedOrigins,
        chains,
        adminToken,
        // Every browser on the local stack is 127.0.0.1: per-IP limits would count all of them as
        // one client (a morning of trying the demo, or one end-to-end run). Per email and per code stay.
        limitsPerIp: DEV_LIMITS_PER_IP,
        // "Continue as guest" in the demo's connect modal (off by default elsewhere).
        guests: true,
        // Sponsored gas for the demo's users (ERC-7677 at /paymaster): sponsorship.ts's policy.
        paymaster,
        // GitHub and Discord as operator-configured OpenID Connect providers, played locally too.
        ...(oauth
          ? {
              oauth: {
                google: { ...oauth.google },
                apple: { ...oauth.apple },
                github: { ...oauth.github, displayName: 'GitHub' },
                discord: { ...oauth.discord, displayName: 'Discord' },
              },
            }
          : {}),
      })
      try {
        await server.start()
      } catch (error) {
        await server.stop()
        if ((error as NodeJS.ErrnoException).code === 'EADDRINUSE') throw new PortInUseError({ name: 'server', host, port })
        throw error
      }
      running = server
    },
    async stop() {
      await running?.stop()
      running = undefined
    },
  })
}
