/**
 * One kms instance killed with SIGKILL mid-load: stamped create_wallet requests (one wallet name
 * each) spread over two instances on one PostgreSQL; the second is killed once it has acknowledged
 * a few; a request the kill cuts is sent again, the same bytes, to the instance left, as a
 * client with failover does, and that client stays there. Then the store must hold every wallet exactly once, and every acknowledged
 * activity completed. Used by bench:cluster's kms section.
 */
import { performance } from 'node:perf_hooks'
import { ApiKeyStamper } from '@turnkey/api-key-stamper'
import { TurnkeyClient } from '@turnkey/http'
import type { kmsCluster } from './instances.js'

export type KillOutcome = {
  requests: number
  /** Answered 200, by either instance, at first or on the retry. */
  acknowledged: number
  /** Cut by the kill (connection lost or refused), then sent again, the same bytes, to the instance left. */
  retried: number
  /** Of the retries: answered with the activity the killed instance had committed before it died. */
  committedBeforeKill: number
  /** Wallets the store lacks although a request for them was acknowledged. */
  lost: number
  /** Wallet names stored more than once. */
  twice: number
  /** Requests not answered 200 in the end (a 500, say, or a retry that failed too). */
  failed: number
  firstFailure: string | undefined
  seconds: number
}

type Answer = { status: number; activity?: { id: string; status: string; createdAt?: { seconds: string; nanos: string } } | undefined; text: string }

/** Posts the exact bytes with their stamp; status 0 when the connection fails (the instance died). */
async function post(url: string, body: string, headers: Record<string, string>): Promise<Answer> {
  try {
    const response = await fetch(`${url}/public/v1/submit/create_wallet`, { method: 'POST', body, headers })
    const text = await response.text()
    const activity = response.ok ? (JSON.parse(text) as { activity: Answer['activity'] }).activity : undefined
    return { status: response.status, activity, text }
  } catch {
    return { status: 0, text: '' }
  }
}

/**
 * Runs the kill on `cluster` (two instances; the second is killed and stays down): `requests`
 * create_wallet requests, `concurrency` in flight, instance 2 killed after `killAfter` answers of its own.
 */
export async function killMidLoad(
  cluster: Awaited<ReturnType<typeof kmsCluster>>,
  requests: number,
  concurrency: number,
  killAfter = 20,
): Promise<KillOutcome> {
  const [first, second] = cluster.instances
  if (!first || !second) throw new Error('the kill needs two instances')
  const stamper = new ApiKeyStamper(cluster.userKey)
  const run = `${Date.now()}`
  // Stamped before the load, and kept: a retry sends exactly these bytes.
  const prepared = await Promise.all(
    Array.from({ length: requests }, async (_, index) => {
      const body = JSON.stringify({
        type: 'ACTIVITY_TYPE_CREATE_WALLET',
        timestampMs: String(Date.now()),
        organizationId: cluster.organizationId,
        parameters: {
          walletName: `kill ${run} ${index}`,
          accounts: [{ curve: 'CURVE_SECP256K1', pathFormat: 'PATH_FORMAT_BIP32', path: "m/44'/60'/0'/0/0", addressFormat: 'ADDRESS_FORMAT_ETHEREUM' }],
        },
      })
      const { stampHeaderName, stampHeaderValue } = await stamper.stamp(body)
      return { name: `kill ${run} ${index}`, body, headers: { 'content-type': 'application/json', [stampHeaderName]: stampHeaderValue } }
    }),
  )
  const answers: Answer[] = new Array(requests)
  let answeredBySecond = 0
  let killedAt: number | undefined
  let retried = 0
  let committedBeforeKill = 0
  let next = 0
  const started = performance.now()
  await Promise.all(
    Array.from({ length: concurrency }, async (_, slot) => {
      let target = slot % 2 ? second : first
      while (next < prepared.length) {
        const index = next++
        const item = prepared[index]!
        let answer = await post(target.url, item.body, item.headers)
        if (answer.status === 0 && target === second) {
          // Cut by the kill: the client sends the same bytes to the instance left, and stays there.
          target = first
          retried++
          answer = await post(first.url, item.body, item.headers)
          const created = answer.activity?.createdAt
          if (created && killedAt !== undefined && Number(created.seconds) * 1000 + Number(created.nanos) / 1e6 <= killedAt) committedBeforeKill++
        }
        answers[index] = answer
        if (target === second && answer.status === 200 && ++answeredBySecond === killAfter && killedAt === undefined) {
          killedAt = Date.now()
          second.child.kill('SIGKILL')
        }
      }
    }),
  )
  if (killedAt === undefined) throw new Error('instance 2 answered too few requests to be killed mid-load; raise the request count')
  await new Promise((resolve) => (second.child.exitCode !== null || second.child.signalCode !== null ? resolve(undefined) : second.child.once('exit', resolve)))

  let failed = 0
  let firstFailure: string | undefined
  for (const answer of answers)
    if (answer.status !== 200) {
      failed++
      firstFailure ??= `${answer.status} ${answer.text.slice(0, 200)}`
    }
  const acknowledged = answers.length - failed
  const seconds = (performance.now() - started) / 1000

  // What the store holds, read through the instance left.
  const client = new TurnkeyClient({ baseUrl: first.url }, stamper)
  const names = (await client.getWallets({ organizationId: cluster.organizationId })).wallets.map((wallet) => wallet.walletName)
  const counts = new Map<string, number>()
  for (const name of names) counts.set(name, (counts.get(name) ?? 0) + 1)
  let lost = 0
  for (const [index, item] of prepared.entries()) {
    if (answers[index]!.status !== 200) continue
    const { activity } = await client.getActivity({ organizationId: cluster.organizationId, activityId: answers[index]!.activity!.id })
    if (!counts.get(item.name) || activity.status !== 'ACTIVITY_STATUS_COMPLETED') lost++
  }
  const twice = [...counts.values()].filter((count) => count > 1).length
  return { requests, acknowledged, retried, committedBeforeKill, lost, twice, failed, firstFailure, seconds }
}
