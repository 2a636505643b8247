/**
 * kms instances for the benches: `latchkey-kms` processes on one store, and a measured run of
 * stamped sign_raw_payload requests spread over them by the load client (bench/kms/load.ts) in a
 * process of its own. Used by bench/kms.ts and bench:cluster's kms section.
 */
import { type ChildProcess, fork } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { getFreePort } from '@latchkey/devnet'
import { generateApiKeyPair as apiKeyPair, createKms } from '@latchkey/kms'
import { secp256k1 } from '@noble/curves/secp256k1'
import { ApiKeyStamper } from '@turnkey/api-key-stamper'
import { TurnkeyClient } from '@turnkey/http'
import type { CpuGroup, CpuQuotas } from '../cluster/cpuQuota.js'
import { startService, stopService } from '../services.js'
import { type CpuSplit, cpuMeter, machineBusyMs, postgresPids } from './cpu.js'
import type { LoadResult, LoadStart } from './load.js'

export type KmsStore = { databaseUrl: string } | { databasePath: string }
export type Measured = {
  label: string
  rate: number
  p50: number
  p99: number
  failed: number
  firstFailure: string | undefined
  cpu: CpuSplit
  /** With CPU quotas: the share of the window's quota periods in which the instances were throttled (used their whole quota). */
  throttled?: number | undefined
}

export const percentile = (sorted: readonly number[], p: number) => sorted[Math.min(sorted.length - 1, Math.floor((sorted.length * p) / 100))] ?? Number.NaN

/** What else an instance is started with: CLI flags (`args`), node flags (`nodeArgs`) and environment (`env`). */
export type InstanceOptions = { args?: readonly string[]; nodeArgs?: readonly string[]; env?: Record<string, string> }

/** A latchkey-kms process on `port`; resolves once it answers /readyz. */
export const startInstance = (port: number, store: KmsStore, keys: { masterKey: string; signerKey: string }, options: InstanceOptions = {}) =>
  startService(
    'latchkey-kms',
    'packages/kms/src/cli.ts',
    port,
    [...('databasePath' in store ? ['--db', store.databasePath] : []), ...(options.args ?? [])],
    {
      DATABASE_URL: 'databaseUrl' in store ? store.databaseUrl : '',
      LATCHKEY_KMS_MASTER_KEY: keys.masterKey,
      LATCHKEY_KMS_SIGNER_KEY: keys.signerKey,
      LATCHKEY_SMTP_URL: '',
      ...options.env,
    },
    options.nodeArgs,
  )

export const stopInstance = stopService

/**
 * A user sub-organization of `parentOrganizationId` with one API key and one Ethereum wallet
 * account, created by the parent's `backendKey` on the kms at `baseUrl`; `userKey` signs, as the
 * sub-organization's one root user.
 *
 * With `policies`, Turnkey's delegated access as a production app sets it up: two root users, the
 * end user and the app's delegated user; the delegated user writes BENCH_POLICY_COUNT policies
 * (one lets it sign with the wallet, the others allow or deny other things, as an organization's
 * policy set does) and leaves the root quorum; the end user makes a grant with a rolling spend
 * window. `userKey` is then the delegated user's key: each of its signatures goes through the
 * permission model and every policy.
 */
export async function createBenchUser(
  baseUrl: string,
  backendKey: ReturnType<typeof apiKeyPair>,
  parentOrganizationId: string,
  userEmail?: string,
  options: { policies?: boolean } = {},
) {
  const userKey = apiKeyPair()
  const delegatedKey = apiKeyPair()
  const backend = new TurnkeyClient({ baseUrl }, new ApiKeyStamper(backendKey))
  const rootUser = (userName: string, key: ReturnType<typeof apiKeyPair>, email?: string) => ({
    userName,
    ...(email ? { userEmail: email } : {}),
    apiKeys: [{ apiKeyName: 'k', publicKey: key.apiPublicKey, curveType: 'API_KEY_CURVE_P256' as const }],
    authenticators: [],
    oauthProviders: [],
  })
  const { activity } = await backend.createSubOrganization({
    type: 'ACTIVITY_TYPE_CREATE_SUB_ORGANIZATION_V8',
    timestampMs: String(Date.now()),
    organizationId: parentOrganizationId,
    parameters: {
      subOrganizationName: 'bench user',
      rootQuorumThreshold: 1,
      rootUsers: [rootUser('bench', userKey, userEmail), ...(options.policies ? [rootUser('delegated', delegatedKey)] : [])],
      wallet: {
        walletName: 'Turnkey HD',
        accounts: [{ curve: 'CURVE_SECP256K1', pathFormat: 'PATH_FORMAT_BIP32', path: "m/44'/60'/0'/0/0", addressFormat: 'ADDRESS_FORMAT_ETHEREUM' }],
      },
    },
  })
  const result = activity.result.createSubOrganizationResultV8!
  const organizationId = result.subOrganizationId!
  const signWith = result.wallet!.addresses[0]!
  if (!options.policies) return { userKey, organizationId, signWith }

  const [endUserId, delegatedUserId] = result.rootUserIds as [string, string]
  const delegated = new TurnkeyClient({ baseUrl }, new ApiKeyStamper(delegatedKey))
  const policies = benchPolicies({ delegatedUserId, walletId: result.wallet!.walletId })
  await delegated.createPolicies({
    type: 'ACTIVITY_TYPE_CREATE_POLICIES',
    timestampMs: String(Date.now()),
    organizationId,
    parameters: { policies: policies.map((policy) => ({ notes: '', ...policy })) },
  })
  await delegated.updateRootQuorum({
    type: 'ACTIVITY_TYPE_UPDATE_ROOT_QUORUM',
    timestampMs: String(Date.now()),
    organizationId,
    parameters: { threshold: 1, userIds: [endUserId] },
  })
  // The end user's grant: 0.01 ETH per rolling hour from the wallet's account, for a day.
  const endUser = new TurnkeyClient({ baseUrl }, new ApiKeyStamper(userKey))
  const grant = await endUser.request<object, { activity: { status: string } }>('/public/v1/submit/create_grant', {
    type: 'ACTIVITY_TYPE_LATCHKEY_CREATE_GRANT',
    timestampMs: String(Date.now()),
    organizationId,
    parameters: {
      userId: endUserId,
      apiKey: { apiKeyName: 'grant', publicKey: apiKeyPair().apiPublicKey },
      grant: {
        chainId: '1',
        account: signWith,
        expiry: String(Math.floor(Date.now() / 1000) + 23 * 3600),
        permissions: [{ type: 'native-token-recurring-allowance', data: { allowance: String(10n ** 16n), start: '0', period: '3600' } }],
      },
    },
  })
  if (grant.activity.status !== 'ACTIVITY_STATUS_COMPLETED') throw new Error(`create_grant: ${grant.activity.status}`)
  return { userKey: delegatedKey, organizationId, signWith }
}

/** How many policies bench:kms's organization has (the production organization: at least 10), beside its grant. */
export const BENCH_POLICY_COUNT = 10

/**
 * An organization's policy set as a delegated-access app writes it: the delegated user signs with
 * the wallet; transactions are held to an allowlist and a value; exports, EIP-7702 delegations and
 * a burn address are denied; a treasury needs two approvers; tagged operators may sign.
 */
function benchPolicies({ delegatedUserId, walletId }: { delegatedUserId: string; walletId: string }) {
  const delegated = `approvers.any(user, user.id == '${delegatedUserId}')`
  const signTransaction = "activity.type == 'ACTIVITY_TYPE_SIGN_TRANSACTION_V2'"
  const policies: { policyName: string; effect: 'EFFECT_ALLOW' | 'EFFECT_DENY'; consensus: string; condition: string }[] = [
    {
      policyName: 'delegated signs with the wallet',
      effect: 'EFFECT_ALLOW',
      consensus: delegated,
      condition: `activity.resource == 'PRIVATE_KEY' && activity.action == 'SIGN' && wallet.id == '${walletId}'`,
    },
    {
      policyName: 'no burn address',
      effect: 'EFFECT_DENY',
      consensus: '',
      condition: `${signTransaction} && eth.tx.to == '0x000000000000000000000000000000000000dead'`,
    },
    { policyName: 'at most 1 ETH', effect: 'EFFECT_DENY', consensus: '', condition: `${signTransaction} && eth.tx.value > 1000000000000000000` },
    { policyName: 'no exports by the app', effect: 'EFFECT_DENY', consensus: delegated, condition: "activity.action == 'EXPORT'" },
    {
      policyName: 'allowlisted contracts',
      effect: 'EFFECT_ALLOW',
      consensus: delegated,
      condition: `${signTransaction} && eth.tx.to in ['0x1111111111111111111111111111111111111111', '0x2222222222222222222222222222222222222222']`,
    },
    {
      policyName: 'no delegations by the app',
      effect: 'EFFECT_DENY',
      consensus: delegated,
      condition: "activity.type == 'ACTIVITY_TYPE_SIGN_RAW_PAYLOAD_V2' && activity.params.encoding == 'PAYLOAD_ENCODING_EIP7702_AUTHORIZATION'",
    },
    {
      policyName: 'mainnet permits',
      effect: 'EFFECT_ALLOW',
      consensus: delegated,
      condition: "eth.eip_712.primary_type == 'Permit' && eth.eip_712.domain.chain_id == 1",
    },
    { policyName: 'treasury needs two', effect: 'EFFECT_ALLOW', consensus: 'approvers.count() >= 2', condition: "wallet.label == 'Treasury'" },
    {
      policyName: 'operators sign',
      effect: 'EFFECT_ALLOW',
      consensus: "approvers.any(user, user.tags.contains('operator-tag'))",
      condition: "activity.action == 'SIGN'",
    },
    { policyName: 'no key deletions', effect: 'EFFECT_DENY', consensus: '', condition: "activity.resource == 'PRIVATE_KEY' && activity.action == 'DELETE'" },
  ]
  if (policies.length !== BENCH_POLICY_COUNT) throw new Error('bench policies: the count changed')
  return policies
}

/**
 * A store with the app's organization and a user with one wallet, and `count` instances on it
 * (each started with `instance`'s flags); with `quotas`, each instance in a CPU group of its own
 * (no quota until `limit`). The caller stops the instances (and closes the quotas). The app's
 * `backendKey` and `parentOrganizationId` come back too, for more users.
 */
export async function kmsCluster(
  count: number,
  store: KmsStore,
  quotas?: CpuQuotas | undefined,
  name = 'kms',
  instance: InstanceOptions = {},
  user: { policies?: boolean } = {},
) {
  const keys = { masterKey: randomBytes(32).toString('hex'), signerKey: Buffer.from(secp256k1.utils.randomPrivateKey()).toString('hex') }
  // The app's organization, written to the store before the instances start.
  const setup = createKms({ ...store, masterKey: Buffer.from(keys.masterKey, 'hex') })
  const backendKey = apiKeyPair()
  const parent = await setup.createParentOrganization({ name: 'Bench', userName: 'backend', publicKey: backendKey.apiPublicKey })
  await setup.stop()
  const instances: { child: ChildProcess; url: string; group?: CpuGroup | undefined }[] = []
  for (let i = 0; i < count; i++) {
    const started = await startInstance(await getFreePort(), store, keys, instance)
    const group = quotas?.group(`${name}-${i + 1}`)
    // Once it answers: the quota binds during the measured windows, not the start-up's compilation.
    group?.add(started.child.pid!)
    instances.push({ ...started, group })
  }
  const postgresPort = 'databaseUrl' in store ? Number(new URL(store.databaseUrl).port) : undefined
  return {
    instances,
    postgresPort,
    backendKey,
    parentOrganizationId: parent.organizationId,
    /** Caps every instance at `cpus` cores each, or lifts the caps. */
    limit(cpus: number | undefined) {
      for (const instance of instances) instance.group?.limit(cpus)
    },
    ...(await createBenchUser(instances[0]!.url, backendKey, parent.organizationId, undefined, user)),
  }
}

/**
 * `requests` signatures spread over `cluster`'s instances, `concurrency` in flight, measured by the
 * load client in its own process, after `warmup` more that are not timed.
 */
export async function measureLoad(
  label: string,
  cluster: Awaited<ReturnType<typeof kmsCluster>>,
  requests: number,
  concurrency: number,
  warmup = 300,
): Promise<Measured> {
  const client = fork(new URL('./load.ts', import.meta.url).pathname, [], {
    execArgv: ['--conditions=source', '--import', 'tsx'],
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  })
  const next = () =>
    new Promise<{ type: string }>((resolve, reject) => {
      client.once('message', (message) => resolve(message as { type: string }))
      client.once('exit', (code) => reject(new Error(`the load client exited (${code})`)))
    })
  const urls = cluster.instances.map((instance) => instance.url)
  const start: LoadStart = {
    type: 'start',
    url: urls[0]!,
    urls,
    organizationId: cluster.organizationId,
    signWith: cluster.signWith,
    ...cluster.userKey,
    requests,
    concurrency,
    warmup,
  }
  const readyMessage = next()
  client.send(start)
  if ((await readyMessage).type !== 'ready') throw new Error('the load client did not get ready')
  const resultMessage = next()
  const port = cluster.postgresPort
  const meter = cpuMeter({
    kms: () => cluster.instances.map((instance) => instance.child.pid!),
    postgres: () => (port === undefined ? [] : postgresPids(port)),
  })
  const groups = cluster.instances.flatMap((instance) => (instance.group ? [instance.group] : []))
  const throttlingBefore = groups.map((group) => group.throttling())
  const busyBefore = machineBusyMs()
  client.send({ type: 'go' })
  const load = (await resultMessage) as LoadResult
  const used = meter.read()
  const busy = machineBusyMs() - busyBefore
  const throttling = groups.map((group, index) => {
    const [now, before] = [group.throttling(), throttlingBefore[index]!]
    return { periods: now.periods - before.periods, throttled: now.throttledPeriods - before.throttledPeriods }
  })
  const periods = throttling.reduce((sum, item) => sum + item.periods, 0)
  const latencies = load.latencies.sort((a, b) => a - b)
  const perRequest = (ms: number) => (ms * 1000) / load.served
  return {
    label,
    rate: load.served / load.seconds,
    p50: percentile(latencies, 50),
    p99: percentile(latencies, 99),
    failed: load.failed,
    firstFailure: load.firstFailure,
    cpu: {
      kms: perRequest(used.kms),
      postgres: perRequest(used.postgres),
      client: perRequest(load.cpuMs),
      others: perRequest(Math.max(0, busy - used.kms - used.postgres - load.cpuMs)),
    },
    // Periods count only while a quota is set: none in an unconstrained window.
    throttled: periods ? throttling.reduce((sum, item) => sum + item.throttled, 0) / periods : undefined,
  }
}

/**
 * `compareRequests` signatures spread over `count` fresh instances on `store` (its user's
 * organization as `user` says), then the instances stopped. A fresh instance is still compiling its
 * hot path for its first several thousand requests: give `warmup` as bench:kms's own (--warmup).
 */
export async function measureInstances(
  label: string,
  count: number,
  store: KmsStore,
  requests: number,
  concurrency: number,
  user: { policies?: boolean } = {},
  warmup?: number,
): Promise<Measured> {
  const cluster = await kmsCluster(count, store, undefined, 'kms', {}, user)
  try {
    return await measureLoad(label, cluster, requests, concurrency, warmup)
  } finally {
    await Promise.all(cluster.instances.map((instance) => stopInstance(instance.child)))
  }
}
