/**
 * One kms instance killed with SIGKILL mid-load: stamped create_wallet requests (one wallet name
 * each) spread over two instances on one PostgreSQL; the second is killed once it has acknowledged
 * a few; what was not acknowledged is sent again, the same bytes, to the instance left, as a
 * client retries. Then the store must hold every wallet exactly once, and every acknowledged
 * activity completed. Used by bench:cluster's kms section.
 */
import { performance } from 'node:perf_hooks'
import { ApiKeyStamper } from '@turnkey/api-key-stamper'
import { TurnkeyClient } from '@turnkey/http'
import type { kmsCluster } from './instances.js'

export type KillOutcome = {
  requests: number
  /** Answered 200 before or after the kill, by either instance, before any retry. */
  acknowledged: number
  /** Cut by the kill (connection lost or refused), then retried on the instance left. */
  retried: number
  /** Of the retries: answered with the activity the killed instance had committed before it died. */
  committedBeforeKill: number
  /** Wallets the store lacks although a request for them was acknowledged. */
  lost: number
  /** Wallet names stored more than once. */
  twice: number
  /** Answers other than 200 or a cut connection (a 500, say), first and after retry. */
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
  let next = 0
  const started = performance.now()
  await Promise.all(
    Array.from({ length: concurrency }, async (_, slot) => {
      const target = slot % 2 ? second : first
      while (next < prepared.length) {
        const index = next++
        const item = prepared[index]!
        const answer = await post(target.url, item.body, item.headers)
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
  const fail = (answer: Answer) => {
    failed++
    firstFailure ??= `${answer.status} ${answer.text.slice(0, 200)}`
  }
  const acknowledged = answers.filter((answer) => answer.status === 200).length
  let retried = 0
  let committedBeforeKill = 0
  for (const [index, answer] of answers.entries()) {
    if (answer.status === 200) continue
    if (answer.status !== 0) {
      fail(answer)
      continue
    }
    retried++
    const again = await post(first.url, prepared[index]!.body, prepared[index]!.headers)
    answers[index] = again
    if (again.status !== 200) fail(again)
    else if (again.activity?.createdAt && Number(again.activity.createdAt.seconds) * 1000 + Number(again.activity.createdAt.nanos) / 1e6 <= killedAt)
      committedBeforeKill++
  }
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
