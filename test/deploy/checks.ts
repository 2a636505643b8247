import { execFile } from 'node:child_process'
import { promisify } from 'node:util'

// What the deploy files (deploy/) are checked against: each bin's own --help, parsed into the
// variables it reads. The checks are functions of the parsed files, returning their problems as
// sentences, so a test can show one fails on a wrong copy as well as pass on the real files.

const run = promisify(execFile)

export const BINS = ['latchkey-relay', 'latchkey-kms', 'latchkey-server'] as const
export type Bin = (typeof BINS)[number]

/** What a bin reads, from its --help. */
export type BinSettings = {
  bin: Bin
  /** Every variable it reads, secrets' `X` and `X_FILE` included. */
  variables: ReadonlySet<string>
  /** Secrets: `X`, which may also come from the file `X_FILE`. Deploy files may only use `X_FILE`. */
  secrets: ReadonlySet<string>
  /** Defaults as --help prints them (`Default: 8090.`), by variable. */
  defaults: ReadonlyMap<string, string>
  /** The whole text (NODE_ENV is named in it, not as a setting). */
  help: string
}

const PACKAGE_OF: Record<Bin, string> = { 'latchkey-relay': 'relay', 'latchkey-kms': 'kms', 'latchkey-server': 'server' }

/** Runs a bin from its source with --help and parses its options. */
export async function binSettings(bin: Bin, repoRoot: string): Promise<BinSettings> {
  const { stdout } = await run(process.execPath, ['--conditions=source', '--import', 'tsx', `packages/${PACKAGE_OF[bin]}/src/cli.ts`, '--help'], {
    cwd: repoRoot,
    env: { PATH: process.env['PATH'] ?? '' },
  })
  return parseHelp(bin, stdout)
}

/**
 * The options of a --help text: a line `  --flag <v>, VAR` (or `  --flag, VAR=1`) or, for a
 * secret, `  VAR, or a file: --flag-file <path> / VAR_FILE`, then its description lines.
 */
export function parseHelp(bin: Bin, help: string): BinSettings {
  const variables = new Set<string>()
  const secrets = new Set<string>()
  const defaults = new Map<string, string>()
  let current: string | undefined
  for (const line of help.split('\n')) {
    const secret = /^ {2}([A-Z][A-Z0-9_]*), or a file: --\S+ <path> \/ ([A-Z][A-Z0-9_]*_FILE)$/.exec(line)
    const plain = /^ {2}--\S+(?: [^,]+)?, ([A-Z][A-Z0-9_]*)(?:=1)?$/.exec(line)
    if (secret) {
      variables.add(secret[1]!).add(secret[2]!)
      secrets.add(secret[1]!)
      current = secret[1]
    } else if (plain) {
      variables.add(plain[1]!)
      current = plain[1]
    } else if (/^ {2}\S/.test(line)) current = undefined
    else if (current !== undefined) {
      const found = /Default: ([^\s,;]+?)\.(?:\s|$)/.exec(line)
      if (found) defaults.set(current, found[1]!)
    }
  }
  return { bin, variables, secrets, defaults, help }
}

/** The seconds a bin's shutdown may take: the drain, then the graceful stop, from `env` or the defaults. */
function shutdownSeconds(env: Record<string, string>, settings: BinSettings): number {
  const seconds = (name: string) => Number(env[name] ?? settings.defaults.get(name) ?? Number.NaN)
  return seconds('LATCHKEY_SHUTDOWN_DELAY') + seconds('LATCHKEY_SHUTDOWN_TIMEOUT')
}

/** Variables set for a bin that it does not read, or secrets set by value rather than by file. */
export function environmentProblems(where: string, env: Record<string, string>, settings: BinSettings): string[] {
  const problems: string[] = []
  for (const name of Object.keys(env)) {
    if (!settings.variables.has(name) && !(name === 'NODE_ENV' && settings.help.includes('NODE_ENV=production')))
      problems.push(`${where}: ${name} is not a variable ${settings.bin} reads`)
    if (settings.secrets.has(name)) problems.push(`${where}: the secret ${name} is set as a value; give it as a file (${name}_FILE)`)
  }
  for (const [name, expected] of [['PORT', settings.defaults.get('PORT')] as const])
    if (env[name] !== undefined && env[name] !== expected)
      problems.push(`${where}: ${name} is ${env[name]}, not ${settings.bin}'s default ${expected} that the other files assume`)
  return problems
}

// --- Dockerfile --------------------------------------------------------------------------------

export type Instruction = { keyword: string; args: string }

/** A Dockerfile's instructions, continuation lines joined and comments dropped. */
export function parseDockerfile(text: string): Instruction[] {
  const logical: string[] = []
  let pending = ''
  for (const line of text.split('\n')) {
    if (/^\s*#/.test(line) && pending === '') continue
    if (/^\s*#/.test(line)) continue
    const joined = pending + line.trim()
    if (joined.endsWith('\\')) pending = `${joined.slice(0, -1).trimEnd()} `
    else {
      if (joined) logical.push(joined)
      pending = ''
    }
  }
  return logical.map((line) => {
    const [keyword, ...rest] = line.split(/\s+/)
    return { keyword: keyword!.toUpperCase(), args: rest.join(' ') }
  })
}

/** `ENV A=1 B=2` as a record (the key=value form only). */
const envOf = (args: string) =>
  Object.fromEntries([...args.matchAll(/([A-Za-z_][A-Za-z0-9_]*)=("[^"]*"|\S*)/g)].map((match) => [match[1]!, match[2]!.replace(/^"|"$/g, '')]))

export function dockerfileProblems(instructions: readonly Instruction[], settings: readonly BinSettings[]): string[] {
  const problems: string[] = []
  const of = (keyword: string) => instructions.filter((instruction) => instruction.keyword === keyword)
  const image = /^NODE_IMAGE=(\S+)$/.exec(of('ARG').find((instruction) => instruction.args.startsWith('NODE_IMAGE='))?.args ?? '')?.[1]
  if (!image || !/^node:20-bookworm-slim@sha256:[0-9a-f]{64}$/.test(image))
    problems.push(`Dockerfile: the base is not node:20-bookworm-slim pinned by digest (${image})`)
  const stages = of('FROM')
  if (stages.length < 2) problems.push('Dockerfile: not multi-stage')
  for (const stage of stages) if (!stage.args.startsWith(`\${NODE_IMAGE}`)) problems.push(`Dockerfile: FROM ${stage.args} is not the pinned base`)
  const runtimeStart = instructions.lastIndexOf(stages.at(-1)!)
  const runtime = instructions.slice(runtimeStart)
  if (!runtime.some((instruction) => instruction.keyword === 'COPY' && instruction.args.startsWith('--from=build ')))
    problems.push('Dockerfile: the runtime stage does not copy the build stage')

  const install = of('RUN').find((instruction) => instruction.args.includes('npm install'))
  if (!install?.args.includes('/tmp/packs/*.tgz')) problems.push('Dockerfile: the packages are not installed from the packed tarballs')

  const users = runtime.filter((instruction) => instruction.keyword === 'USER')
  const user = users.at(-1)?.args
  if (!user || !/^[1-9]\d*:[1-9]\d*$/.test(user)) problems.push(`Dockerfile: the runtime user is ${user ?? 'root (no USER)'}, not a numeric non-root uid:gid`)

  const env = Object.assign({}, ...runtime.filter((instruction) => instruction.keyword === 'ENV').map((instruction) => envOf(instruction.args))) as Record<
    string,
    string
  >
  const { PATH: _path, ...settingsEnv } = env
  // The image serves every bin: what it sets must be read by each of them (the PORT is the default CMD's).
  for (const bin of settings)
    problems.push(...environmentProblems(`Dockerfile ENV (${bin.bin})`, bin.bin === 'latchkey-relay' ? settingsEnv : omit(settingsEnv, 'PORT'), bin))
  if (env['HOST'] !== '0.0.0.0') problems.push('Dockerfile: HOST is not 0.0.0.0: nothing outside the container could connect')

  const health = of('HEALTHCHECK').at(-1)?.args ?? ''
  if (!health.includes('/readyz') || !health.includes('process.env.PORT')) problems.push('Dockerfile: the HEALTHCHECK does not ask /readyz on PORT')
  const cmd = of('CMD').at(-1)?.args
  if (cmd !== '["latchkey-relay"]') problems.push(`Dockerfile: CMD is ${cmd}, not ["latchkey-relay"]`)
  const exposed = new Set(of('EXPOSE').flatMap((instruction) => instruction.args.split(/\s+/)))
  for (const bin of settings)
    for (const name of ['PORT', 'LATCHKEY_KMS_FRAMES_PORT']) {
      const port = bin.defaults.get(name)
      if (port !== undefined && !exposed.has(port)) problems.push(`Dockerfile: ${bin.bin}'s ${name} ${port} is not exposed`)
    }
  return problems
}

const omit = (record: Record<string, string>, name: string) => Object.fromEntries(Object.entries(record).filter(([key]) => key !== name))

// --- compose.yaml -------------------------------------------------------------------------------

type ComposeService = {
  command?: string[]
  environment?: Record<string, string>
  secrets?: string[]
  user?: string
  read_only?: boolean
  stop_grace_period?: string
}
export type Compose = { services: Record<string, ComposeService>; secrets?: Record<string, { file?: string }> }

const seconds = (duration: string | undefined) => {
  const match = /^(\d+)s$/.exec(duration ?? '')
  return match ? Number(match[1]) : Number.NaN
}

/** The compose file's Latchkey services (those whose command is a bin) and its other services. */
export function composeProblems(compose: Compose, settings: readonly BinSettings[]): string[] {
  const problems: string[] = []
  const seen = new Set<string>()
  for (const [name, service] of Object.entries(compose.services)) {
    const env = Object.fromEntries(Object.entries(service.environment ?? {}).map(([key, value]) => [key, String(value)]))
    // Every service, PostgreSQL's too: a variable that looks like a secret is a file.
    for (const key of Object.keys(env))
      if (/PASSWORD|SECRET|PRIVATE_KEY|MASTER_KEY|SIGNER_KEY|JWT_KEY|DATABASE_URL|SMTP_URL/.test(key) && !key.endsWith('_FILE'))
        problems.push(`compose ${name}: ${key} is set as a value; secrets come as files`)
    for (const [key, value] of Object.entries(env))
      if (key.endsWith('_FILE')) {
        const secret = /^\/run\/secrets\/([a-z0-9_]+)$/.exec(value)?.[1]
        if (!secret || !service.secrets?.includes(secret) || compose.secrets?.[secret]?.file === undefined)
          problems.push(`compose ${name}: ${key}=${value} is not a compose secret of this service`)
      }
    const bin = settings.find((item) => item.bin === service.command?.[0])
    if (!bin) continue
    seen.add(bin.bin)
    problems.push(...environmentProblems(`compose ${name}`, env, bin))
    if (env['PORT'] === undefined) problems.push(`compose ${name}: PORT is not set (the image's HEALTHCHECK reads it)`)
    problems.push(...metricsProblems(`compose ${name}`, env))
    if (!/^[1-9]\d*:[1-9]\d*$/.test(service.user ?? '')) problems.push(`compose ${name}: user ${service.user} is not a numeric non-root uid:gid`)
    if (service.read_only !== true) problems.push(`compose ${name}: the root filesystem is not read-only`)
    if (!(seconds(service.stop_grace_period) > shutdownSeconds(env, bin)))
      problems.push(
        `compose ${name}: stop_grace_period ${service.stop_grace_period} is not above the shutdown delay plus timeout (${shutdownSeconds(env, bin)} s)`,
      )
  }
  for (const bin of BINS) if (!seen.has(bin)) problems.push(`compose: no service runs ${bin}`)
  return problems
}

// --- Kubernetes ---------------------------------------------------------------------------------

type Probe = { httpGet?: { path?: string; port?: string | number } }
type Container = {
  name: string
  command?: string[]
  env?: { name: string; value?: string; valueFrom?: unknown }[]
  ports?: { name?: string; containerPort: number }[]
  livenessProbe?: Probe
  readinessProbe?: Probe
  startupProbe?: Probe
  securityContext?: { readOnlyRootFilesystem?: boolean; allowPrivilegeEscalation?: boolean; runAsNonRoot?: boolean }
  volumeMounts?: { name: string; mountPath: string }[]
}
type Labels = Record<string, string>
export type KubernetesObject = {
  kind: string
  metadata: { name: string }
  spec: {
    selector?: { matchLabels?: Labels }
    template?: {
      metadata: { labels: Labels; annotations?: Record<string, string> }
      spec: {
        terminationGracePeriodSeconds?: number
        securityContext?: { runAsNonRoot?: boolean; runAsUser?: number }
        containers: Container[]
        volumes?: { name: string; secret?: { secretName: string } }[]
      }
    }
    podSelector?: { matchLabels?: Labels }
    ingress?: { from?: { podSelector?: { matchLabels?: Labels }; namespaceSelector?: { matchLabels?: Labels } }[]; ports?: { port: number }[] }[]
    ports?: { port: number; targetPort?: string | number }[]
  }
}

const matches = (selector: Labels | undefined, labels: Labels) =>
  selector !== undefined && Object.entries(selector).every(([key, value]) => labels[key] === value)

export function kubernetesProblems(objects: readonly KubernetesObject[], settings: readonly BinSettings[]): string[] {
  const problems: string[] = []
  const seen = new Set<string>()
  const deployments = objects.filter((object) => object.kind === 'Deployment')
  for (const deployment of deployments) {
    const where = `Deployment ${deployment.metadata.name}`
    const pod = deployment.spec.template!
    for (const container of pod.spec.containers) {
      const bin = settings.find((item) => item.bin === container.command?.[0])
      if (!bin) {
        problems.push(`${where}: container ${container.name} runs ${container.command?.[0]}, not a Latchkey bin`)
        continue
      }
      seen.add(bin.bin)
      const env: Record<string, string> = {}
      for (const variable of container.env ?? []) {
        if (variable.value === undefined) problems.push(`${where}: ${variable.name} has no plain value (secrets come as mounted files, through *_FILE)`)
        env[variable.name] = variable.value ?? ''
      }
      problems.push(...environmentProblems(where, env, bin))
      const secretMounts = (container.volumeMounts ?? []).filter((mount) => pod.spec.volumes?.find((volume) => volume.name === mount.name)?.secret)
      for (const [name, value] of Object.entries(env))
        if (name.endsWith('_FILE') && !secretMounts.some((mount) => value.startsWith(`${mount.mountPath}/`)))
          problems.push(`${where}: ${name}=${value} is not in a mounted Secret`)

      const portOf = (name: string) => container.ports?.find((port) => port.name === name)?.containerPort
      const expectedPort = Number(env['PORT'] ?? bin.defaults.get('PORT'))
      if (portOf('http') !== expectedPort) problems.push(`${where}: the http port ${portOf('http')} is not the PORT ${expectedPort}`)
      if (bin.variables.has('LATCHKEY_KMS_FRAMES_PORT')) {
        const frames = Number(env['LATCHKEY_KMS_FRAMES_PORT'] ?? bin.defaults.get('LATCHKEY_KMS_FRAMES_PORT'))
        if (portOf('frames') !== frames) problems.push(`${where}: the frames port ${portOf('frames')} is not the LATCHKEY_KMS_FRAMES_PORT ${frames}`)
      }
      problems.push(...metricsProblems(where, env))
      if (portOf('metrics') !== Number(env['LATCHKEY_METRICS_PORT']))
        problems.push(`${where}: the metrics port ${portOf('metrics')} is not the LATCHKEY_METRICS_PORT ${env['LATCHKEY_METRICS_PORT']}`)
      const annotated = pod.metadata.annotations?.['prometheus.io/port']
      if (annotated !== env['LATCHKEY_METRICS_PORT'])
        problems.push(`${where}: the prometheus.io/port annotation ${annotated} is not the LATCHKEY_METRICS_PORT ${env['LATCHKEY_METRICS_PORT']}`)
      const probes: [keyof Container, string][] = [
        ['livenessProbe', '/healthz'],
        ['readinessProbe', '/readyz'],
        ['startupProbe', '/readyz'],
      ]
      for (const [probe, path] of probes) {
        const get = (container[probe] as Probe | undefined)?.httpGet
        if (get?.path !== path || get.port !== 'http') problems.push(`${where}: ${probe} is not GET ${path} on the http port`)
      }
      const security = container.securityContext ?? {}
      if (security.readOnlyRootFilesystem !== true) problems.push(`${where}: the root filesystem is not read-only`)
      if (security.allowPrivilegeEscalation !== false) problems.push(`${where}: privilege escalation is allowed`)
      const grace = pod.spec.terminationGracePeriodSeconds ?? 30
      if (!(grace > shutdownSeconds(env, bin)))
        problems.push(`${where}: terminationGracePeriodSeconds ${grace} is not above the shutdown delay plus timeout (${shutdownSeconds(env, bin)} s)`)
    }
    const podSecurity = pod.spec.securityContext ?? {}
    if (podSecurity.runAsNonRoot !== true || !(Number(podSecurity.runAsUser) > 0)) problems.push(`${where}: the pod does not run as a non-root uid`)
    const labels = pod.metadata.labels
    const budgets = objects.filter((object) => object.kind === 'PodDisruptionBudget' && matches(object.spec.selector?.matchLabels, labels))
    if (budgets.length !== 1) problems.push(`${where}: ${budgets.length} PodDisruptionBudgets select its pods, not 1`)
    const service = objects.find((object) => object.kind === 'Service' && matches((object.spec as { selector?: Labels }).selector as Labels, labels))
    if (!service) problems.push(`${where}: no Service selects its pods`)
  }
  for (const bin of BINS) if (!seen.has(bin)) problems.push(`kubernetes: no Deployment runs ${bin}`)
  problems.push(...kmsPolicyProblems(objects))
  return problems
}

/** The metrics port every bin serves in a deployment: set, and reachable from outside its container. */
function metricsProblems(where: string, env: Record<string, string>): string[] {
  if (env['LATCHKEY_METRICS_PORT'] === undefined) return [`${where}: LATCHKEY_METRICS_PORT is not set: no metrics to scrape`]
  if (env['LATCHKEY_METRICS_HOST'] !== '0.0.0.0')
    return [
      `${where}: LATCHKEY_METRICS_HOST is ${env['LATCHKEY_METRICS_HOST'] ?? '127.0.0.1 (the default)'}, not 0.0.0.0: no scraper outside the container reaches it`,
    ]
  return []
}

/** Only the backend's pods (and the ingress controller, for browsers) reach the kms; Prometheus reaches its metrics port only. */
function kmsPolicyProblems(objects: readonly KubernetesObject[]): string[] {
  const kms = objects.find(
    (object) => object.kind === 'Deployment' && object.spec.template?.spec.containers.some((container) => container.command?.[0] === 'latchkey-kms'),
  )
  const server = objects.find(
    (object) => object.kind === 'Deployment' && object.spec.template?.spec.containers.some((container) => container.command?.[0] === 'latchkey-server'),
  )
  if (!kms || !server) return []
  const kmsLabels = kms.spec.template!.metadata.labels
  const metricsPort = Number(kms.spec.template!.spec.containers[0]?.env?.find((variable) => variable.name === 'LATCHKEY_METRICS_PORT')?.value)
  const policies = objects.filter((object) => object.kind === 'NetworkPolicy' && matches(object.spec.podSelector?.matchLabels, kmsLabels))
  if (policies.length !== 1) return [`NetworkPolicy: ${policies.length} policies select the kms's pods, not 1`]
  const problems: string[] = []
  for (const [index, rule] of (policies[0]!.spec.ingress ?? []).entries()) {
    if (!rule.from?.length) problems.push(`NetworkPolicy ${policies[0]!.metadata.name}: ingress rule ${index} admits every source`)
    for (const peer of rule.from ?? []) {
      // An empty selector matches every pod: only one naming the backend counts.
      const name = 'app.kubernetes.io/name'
      if (peer.podSelector && peer.podSelector.matchLabels?.[name] !== server.spec.template!.metadata.labels[name])
        problems.push(`NetworkPolicy ${policies[0]!.metadata.name}: ingress rule ${index} admits pods other than the backend's`)
      const scraper =
        matches(peer.namespaceSelector?.matchLabels, { 'kubernetes.io/metadata.name': 'monitoring' }) &&
        rule.ports?.length === 1 &&
        rule.ports[0]!.port === metricsPort
      if (peer.namespaceSelector && !scraper && !matches(peer.namespaceSelector.matchLabels, { 'kubernetes.io/metadata.name': 'ingress-nginx' }))
        problems.push(`NetworkPolicy ${policies[0]!.metadata.name}: ingress rule ${index} admits a namespace other than the ingress controller's`)
      if (!peer.podSelector && !peer.namespaceSelector) problems.push(`NetworkPolicy ${policies[0]!.metadata.name}: ingress rule ${index} admits addresses`)
    }
    if (!rule.ports?.length) problems.push(`NetworkPolicy ${policies[0]!.metadata.name}: ingress rule ${index} opens every port`)
  }
  return problems
}
