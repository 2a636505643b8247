import { mkdtemp, rm } from 'node:fs/promises'
import { join } from 'node:path'
import { buildWallet, getFreePort, type Instance, staticServer } from '@latchkey/devnet'
import { BATCH_EXECUTOR_ADDRESS } from '@latchkey/embedded'
import { runInstalledBin, startInstalledBin } from './bins.js'
import type { StartedProcess } from './process.js'

/** The bins' "listening" log line (pino JSON): each says where it listens once it accepts connections. */
export const listening = /"msg":"[^"]* listening on /

/** What `latchkey-kms generate-keys` prints. */
export type KmsKeys = { masterKey: string; signerPrivateKey: string; signerPublicKey: string; apiPrivateKey: string; apiPublicKey: string }

/** Runs a one-off command of an installed bin and parses the JSON it prints; throws with its output otherwise. */
export async function binJson<result>(dir: string, name: string, args: string[]): Promise<result> {
  const run = await runInstalledBin({ dir, name, args })
  if (run.code !== 0) throw new Error(`${name} ${args.join(' ')} exited ${run.code}:\n${run.output}`)
  return JSON.parse(run.output) as result
}

/** Starts an installed server bin on 127.0.0.1 (on `port`, default a free one); `args` come after `--host` and `--port`. */
export async function startServerBin(dir: string, name: string, args: string[] = [], env: Record<string, string> = {}, port?: number) {
  port ??= await getFreePort()
  const bin = await startInstalledBin({ dir, name, args: ['--host', '127.0.0.1', '--port', String(port), ...args], env, ready: listening })
  return { bin, port, url: `http://127.0.0.1:${port}` }
}

/**
 * A kms as an operator sets one up from the installed tarball: `generate-keys`, `init-organization`
 * on a SQLite file, then the service with those keys (its dev inbox at `/dev/mailbox.json`).
 *
 * @example
 * const kms = await startKms(dir, join(dir, 'data'))
 */
export async function startKms(dir: string, dataDir: string, args: string[] = []) {
  const keys = await binJson<KmsKeys>(dir, 'latchkey-kms', ['generate-keys'])
  const db = join(dataDir, 'kms.db')
  const { organizationId } = await binJson<{ organizationId: string }>(dir, 'latchkey-kms', [
    'init-organization',
    '--db',
    db,
    '--name',
    'Acme',
    '--public-key',
    keys.apiPublicKey,
  ])
  const framesPort = await getFreePort()
  const started = await startServerBin(dir, 'latchkey-kms', ['--db', db, '--frames-host', '127.0.0.1', '--frames-port', String(framesPort), ...args], {
    LATCHKEY_KMS_MASTER_KEY: keys.masterKey,
    LATCHKEY_KMS_SIGNER_KEY: keys.signerPrivateKey,
  })
  return { ...started, keys, organizationId, framesUrl: `http://127.0.0.1:${framesPort}` }
}

/**
 * The app backend (`latchkey-server`) on a kms from {@link startKms}, acting for its organization.
 *
 * @example
 * const server = await startServer(dir, kms, { db: join(data, 'server.db'), args: ['--allowed-origin', origin] })
 */
export async function startServer(
  dir: string,
  kms: Awaited<ReturnType<typeof startKms>>,
  { db, args = [], port }: { db: string; args?: string[]; port?: number | undefined },
) {
  return startServerBin(
    dir,
    'latchkey-server',
    [
      '--db',
      db,
      '--kms-url',
      kms.url,
      '--organization-id',
      kms.organizationId,
      '--api-public-key',
      kms.keys.apiPublicKey,
      '--session-signer-public-key',
      kms.keys.signerPublicKey,
      ...args,
    ],
    { LATCHKEY_API_PRIVATE_KEY: kms.keys.apiPrivateKey },
    port,
  )
}

export type LatchkeyServices = {
  /** The relay's WebSocket URL. */
  relay: string
  /** The kms (its dev inbox at `/dev/mailbox.json`). */
  kms: string
  /** The app backend. */
  server: string
  /** The reference wallet (apps/wallet), paired through `relay`. */
  wallet: string
  /** The newest mail the kms's dev inbox holds for `email`. */
  lastMail(email: string): Promise<{ subject: string; text: string }>
  stop(): Promise<void>
}

/**
 * What a wagmi app's WalletConnect and embedded wallet need, as operators run it: the relay, the
 * kms and the app backend from the installed tarballs (`latchkey-relay`, `latchkey-kms`,
 * `latchkey-server`), and the reference wallet, the "phone" across the relay (apps/wallet, built
 * from the workspace: it is the other side of the protocol, not a package an app installs).
 *
 * @example
 * const services = await startLatchkeyServices({ dir, chains: [{ id: 31337, rpcUrl }], allowedOrigins: ['http://127.0.0.1:4173'] })
 */
export async function startLatchkeyServices({
  dir,
  chains,
  allowedOrigins,
  ports = {},
}: {
  dir: string
  /** The chains SIWE messages may name (the first two are the reference wallet's networks A and B). */
  chains: readonly { id: number; rpcUrl: string }[]
  /** The app origins the backend lets call it with credentials. */
  allowedOrigins: readonly string[]
  /** The relay's and the backend's ports, when the app must know its URLs before they start. Default: free ones. */
  ports?: { relay?: number | undefined; server?: number | undefined }
}): Promise<LatchkeyServices> {
  const data = await mkdtemp(join(dir, 'services-'))
  const processes: StartedProcess[] = []
  const instances: Instance[] = []
  const stop = async () => {
    for (const instance of instances.reverse()) await instance.stop()
    await Promise.all(processes.map((process) => process.stop()))
    await rm(data, { recursive: true, force: true })
  }
  try {
    const relayPort = ports.relay ?? (await getFreePort())
    const relayUrl = `ws://127.0.0.1:${relayPort}`
    const walletBuild = buildWallet({ chainARpc: chains[0]!.rpcUrl, chainBRpc: (chains[1] ?? chains[0]!).rpcUrl, relayUrl, outDir: join(data, 'wallet') })
    walletBuild.catch(() => undefined)
    const relay = await startInstalledBin({
      dir,
      name: 'latchkey-relay',
      args: ['--memory', '--host', '127.0.0.1', '--port', String(relayPort)],
      ready: listening,
    })
    processes.push(relay)
    // The apps' pages call the kms from their own origins (no passkey origin of theirs here): its CORS must name them.
    // The embedded wallet's key lives in the kms's consent frame: its frames serve the apps' origins, with the chains and the executor.
    const kms = await startKms(dir, data, [
      ...allowedOrigins.flatMap((origin) => ['--cors-origin', origin, '--frames-parent-origin', origin]),
      ...chains.flatMap((chain) => ['--frames-chain', `${chain.id}=${chain.rpcUrl}`]),
      ...['--eip7702-delegate', BATCH_EXECUTOR_ADDRESS],
    ])
    processes.push(kms.bin)
    const server = await startServer(dir, kms, {
      port: ports.server,
      db: join(data, 'server.db'),
      args: [
        '--app-name',
        'Wagmi consumer',
        '--frames-url',
        kms.framesUrl,
        ...allowedOrigins.flatMap((origin) => ['--allowed-origin', origin]),
        ...chains.flatMap((chain) => ['--chain', `${chain.id}=${chain.rpcUrl}`]),
      ],
    })
    processes.push(server.bin)
    const wallet = staticServer({ name: 'wallet', root: await walletBuild, port: await getFreePort() })
    await wallet.start()
    instances.push(wallet)
    return {
      relay: relayUrl,
      kms: kms.url,
      server: server.url,
      wallet: wallet.url,
      async lastMail(email) {
        const inbox = (await (await fetch(`${kms.url}/dev/mailbox.json`)).json()) as { messages: { to: string; subject: string; text: string }[] }
        const message = inbox.messages.find((candidate) => candidate.to === email)
        if (!message) throw new Error(`no mail for ${email}`)
        return message
      },
      stop,
    }
  } catch (error) {
    await stop().catch(() => undefined)
    throw error
  }
}
