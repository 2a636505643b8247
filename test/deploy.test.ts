import { readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { beforeAll, describe, expect, test } from 'vitest'
import { parse, parseAllDocuments } from 'yaml'
import {
  BINS,
  type BinSettings,
  binSettings,
  type Compose,
  composeProblems,
  dockerfileProblems,
  type KubernetesObject,
  kubernetesProblems,
  parseDockerfile,
} from './deploy/checks.js'

// The deploy files (deploy/) read as Docker, Compose and Kubernetes would, and checked against
// what each bin says it reads (its --help): Docker itself cannot run here. Each check also runs on
// a deliberately wrong copy, to show it would catch the mistake.

const repoRoot = join(import.meta.dirname, '..')
const deployDir = join(repoRoot, 'deploy')
const read = (file: string) => readFileSync(join(deployDir, file), 'utf8')
let settings: BinSettings[] = []

const dockerfile = () => parseDockerfile(read('Dockerfile'))
// Compose takes YAML 1.1 merge keys (`<<: *latchkey`).
const compose = () => parse(read('compose.yaml'), { merge: true }) as Compose
const kubernetes = () =>
  readdirSync(join(deployDir, 'kubernetes'))
    .filter((file) => file.endsWith('.yaml'))
    .sort()
    .flatMap((file) => parseAllDocuments(read(`kubernetes/${file}`)).map((document) => document.toJS() as KubernetesObject))

beforeAll(async () => {
  settings = await Promise.all(BINS.map((bin) => binSettings(bin, repoRoot)))
})

test('default: each bin lists its variables, secrets and default ports in --help', () => {
  const [relay, kms, server] = settings
  expect(relay!.defaults.get('PORT')).toBe('5555')
  expect(kms!.defaults.get('PORT')).toBe('8090')
  expect(kms!.defaults.get('LATCHKEY_KMS_FRAMES_PORT')).toBe('8091')
  expect(server!.defaults.get('PORT')).toBe('8787')
  // The drain reaches every bin through the shared settings.
  for (const bin of settings) expect([bin.variables.has('LATCHKEY_SHUTDOWN_DELAY'), bin.defaults.get('LATCHKEY_SHUTDOWN_DELAY')]).toEqual([true, '0'])
  expect([...kms!.secrets].sort()).toEqual(expect.arrayContaining(['DATABASE_URL', 'LATCHKEY_KMS_MASTER_KEY', 'LATCHKEY_KMS_SIGNER_KEY']))
  expect(kms!.variables.has('LATCHKEY_KMS_MASTER_KEY_FILE')).toBe(true)
})

describe('Dockerfile', () => {
  test('behavior: multi-stage on the pinned base, from the tarballs, a non-root user, HEALTHCHECK on /readyz, every variable read by every bin', () => {
    expect(dockerfileProblems(dockerfile(), settings)).toEqual([])
  })

  test('error: a root user, an unknown variable and an unpinned base are each named', () => {
    const wrong = read('Dockerfile')
      // The runtime stage's user (the last one; the bundler stage has its own).
      .replace(/USER 10001:10001(?![\s\S]*USER 10001:10001)/, 'USER root')
      .replace('HOST=0.0.0.0', 'HOST=0.0.0.0 LATCHKEY_LISTEN=all')
      .replace(/@sha256:[0-9a-f]{64}/, '')
    expect(dockerfileProblems(parseDockerfile(wrong), settings)).toEqual([
      'Dockerfile: the base is not node:20-bookworm-slim pinned by digest (node:20-bookworm-slim)',
      'Dockerfile: the runtime user is root, not a numeric non-root uid:gid',
      'Dockerfile ENV (latchkey-relay): LATCHKEY_LISTEN is not a variable latchkey-relay reads',
      'Dockerfile ENV (latchkey-kms): LATCHKEY_LISTEN is not a variable latchkey-kms reads',
      'Dockerfile ENV (latchkey-server): LATCHKEY_LISTEN is not a variable latchkey-server reads',
    ])
  })
})

describe('compose.yaml', () => {
  test('behavior: every service a bin runs sets only what it reads, secrets as files, read-only as a non-root user, a grace period above delay + timeout', () => {
    expect(composeProblems(compose(), settings)).toEqual([])
  })

  test('error: a variable no bin reads, a secret by value, a short grace period and a root user are each named', () => {
    const wrong = compose()
    const kms = wrong.services['kms']!
    kms.environment = { ...kms.environment, LATCHKEY_KMS_MASTER_KEY: 'aa'.repeat(32), LATCHKEY_KMS_NO_SUCH: '1' }
    kms.stop_grace_period = '10s'
    wrong.services['relay']!.user = '0:0'
    expect(composeProblems(wrong, settings)).toEqual([
      'compose relay: user 0:0 is not a numeric non-root uid:gid',
      'compose kms: LATCHKEY_KMS_MASTER_KEY is set as a value; secrets come as files',
      'compose kms: the secret LATCHKEY_KMS_MASTER_KEY is set as a value; give it as a file (LATCHKEY_KMS_MASTER_KEY_FILE)',
      'compose kms: LATCHKEY_KMS_NO_SUCH is not a variable latchkey-kms reads',
      'compose kms: stop_grace_period 10s is not above the shutdown delay plus timeout (15 s)',
    ])
  })
})

describe('kubernetes/', () => {
  test("behavior: probes on /healthz and /readyz at the bins' ports, secrets as mounted files, grace above delay + timeout, a PDB each, only the backend reaches the kms", () => {
    expect(kubernetesProblems(kubernetes(), settings)).toEqual([])
  })

  test('error: a metrics port the container does not expose, a metrics host of loopback and a scraper reaching the kms API are each named', () => {
    const objects = kubernetes()
    const relay = objects.find((object) => object.kind === 'Deployment' && object.metadata.name === 'latchkey-relay')!
    relay.spec.template!.spec.containers[0]!.ports = relay.spec.template!.spec.containers[0]!.ports!.filter((port) => port.name !== 'metrics')
    const server = objects.find((object) => object.kind === 'Deployment' && object.metadata.name === 'latchkey-server')!
    server.spec.template!.spec.containers[0]!.env = server.spec.template!.spec.containers[0]!.env!.filter(
      (variable) => variable.name !== 'LATCHKEY_METRICS_HOST',
    )
    const policy = objects.find((object) => object.kind === 'NetworkPolicy')!
    policy.spec.ingress!.at(-1)!.ports = [{ port: 8090 }]
    expect(kubernetesProblems(objects, settings)).toEqual([
      'Deployment latchkey-relay: the metrics port undefined is not the LATCHKEY_METRICS_PORT 9464',
      'Deployment latchkey-server: LATCHKEY_METRICS_HOST is 127.0.0.1 (the default), not 0.0.0.0: no scraper outside the container reaches it',
      "NetworkPolicy latchkey-kms: ingress rule 2 admits a namespace other than the ingress controller's",
    ])
  })

  test('error: a manifest naming a variable no bin reads fails', () => {
    const objects = kubernetes()
    const server = objects.find((object) => object.kind === 'Deployment' && object.metadata.name === 'latchkey-server')!
    server.spec.template!.spec.containers[0]!.env!.push({ name: 'LATCHKEY_SERVER_NO_SUCH', value: '1' })
    expect(kubernetesProblems(objects, settings)).toEqual(['Deployment latchkey-server: LATCHKEY_SERVER_NO_SUCH is not a variable latchkey-server reads'])
  })

  test('error: a secret from a Secret by value, a wrong probe, a short grace period and a policy open to every pod are each named', () => {
    const objects = kubernetes()
    const kms = objects.find((object) => object.kind === 'Deployment' && object.metadata.name === 'latchkey-kms')!
    const pod = kms.spec.template!.spec
    pod.containers[0]!.env!.push({ name: 'LATCHKEY_KMS_MASTER_KEY', valueFrom: { secretKeyRef: { name: 'latchkey-kms', key: 'master-key' } } })
    pod.containers[0]!.readinessProbe = { httpGet: { path: '/healthz', port: 'http' } }
    pod.terminationGracePeriodSeconds = 15
    const policy = objects.find((object) => object.kind === 'NetworkPolicy')!
    policy.spec.ingress![0]!.from = [{ podSelector: { matchLabels: {} } }]
    expect(kubernetesProblems(objects, settings)).toEqual([
      'Deployment latchkey-kms: LATCHKEY_KMS_MASTER_KEY has no plain value (secrets come as mounted files, through *_FILE)',
      'Deployment latchkey-kms: the secret LATCHKEY_KMS_MASTER_KEY is set as a value; give it as a file (LATCHKEY_KMS_MASTER_KEY_FILE)',
      'Deployment latchkey-kms: readinessProbe is not GET /readyz on the http port',
      'Deployment latchkey-kms: terminationGracePeriodSeconds 15 is not above the shutdown delay plus timeout (15 s)',
      "NetworkPolicy latchkey-kms: ingress rule 0 admits pods other than the backend's",
    ])
  })
})
