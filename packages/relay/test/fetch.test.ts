import { randomBytes } from 'node:crypto'
import { getFreePort } from '@latchkey/devnet'
import { afterEach, describe, expect, test } from 'vitest'
import { createRelay, memoryStore, type Relay, type RelayLimits, type RelayStore } from '../src/index.js'
import { connectClient } from './client.js'

// irn_batchFetchMessages answers a bounded page; `hasMore: true` says to fetch again.

type Page = { messages: { topic: string; message: string }[]; hasMore: boolean }
const topic = () => randomBytes(32).toString('hex')
let relay: Relay
afterEach(() => relay.stop())

async function start(limits: RelayLimits = {}, store: RelayStore = memoryStore()) {
  relay = createRelay({ port: await getFreePort(), store, limits })
  await relay.start()
  return { alice: await connectClient(relay.url), bob: await connectClient(relay.url) }
}

describe('irn_batchFetchMessages pages', () => {
  test('error: a backlog of 250 messages is answered 100 at a time by default, never whole', async () => {
    const { alice, bob } = await start()
    const t = topic()
    const messages = Array.from({ length: 250 }, (_, index) => ({ topic: t, message: `m${index}`, ttl: 300, tag: 1 }))
    expect(await alice.request('irn_batchPublish', { messages })).toBe(true)
    const pages: Page[] = []
    do pages.push(await bob.request<Page>('irn_batchFetchMessages', { topics: [t] }))
    while (pages.at(-1)!.hasMore)
    expect(pages.map((page) => [page.messages.length, page.hasMore])).toEqual([
      [100, true],
      [100, true],
      [50, false],
    ])
    expect(pages.flatMap((page) => page.messages.map((m) => m.message))).toEqual(messages.map((m) => m.message))
  })

  test('behavior: pages continue over several topics in order, and a complete fetch starts the next afresh', async () => {
    const { alice, bob } = await start({ maxFetchMessages: 3 })
    const [first, second] = [topic(), topic()]
    for (const [t, count] of [
      [first, 4],
      [second, 3],
    ] as const)
      for (let index = 0; index < count; index++) await alice.request('irn_publish', { topic: t, message: `${t.slice(0, 4)}-${index}`, ttl: 300, tag: 1 })
    const fetch = () => bob.request<Page>('irn_batchFetchMessages', { topics: [first, second] })
    const read = (page: Page) => [page.messages.map((m) => m.message), page.hasMore]
    const [a, b] = [first.slice(0, 4), second.slice(0, 4)]
    expect(read(await fetch())).toEqual([[`${a}-0`, `${a}-1`, `${a}-2`], true])
    expect(read(await fetch())).toEqual([[`${a}-3`, `${b}-0`, `${b}-1`], true])
    expect(read(await fetch())).toEqual([[`${b}-2`], false])
    expect(read(await fetch())).toEqual([[`${a}-0`, `${a}-1`, `${a}-2`], true])
  })

  test('behavior: a page holds at most maxFetchBytes of messages, and always one', async () => {
    const { alice, bob } = await start({ maxFetchBytes: 1000 })
    const t = topic()
    for (const size of [400, 400, 400, 1500])
      await alice.request('irn_publish', { topic: t, message: randomBytes(size).toString('hex').slice(0, size), ttl: 300, tag: 1 })
    const sizes = []
    let page: Page
    do {
      page = await bob.request<Page>('irn_batchFetchMessages', { topics: [t] })
      sizes.push(page.messages.map((m) => m.message.length))
    } while (page.hasMore)
    expect(sizes).toEqual([[400, 400], [400], [1500]])
  })

  test('error: a topic named many times in one fetch is read once, and its messages sent once', async () => {
    const store = memoryStore()
    const lists: string[] = []
    const counted: RelayStore = {
      ...store,
      list: (t, now) => {
        lists.push(t)
        return store.list(t, now)
      },
    }
    const { alice, bob } = await start({}, counted)
    const [first, second] = [topic(), topic()]
    const messages = [first, second, first].map((t, index) => ({ topic: t, message: `m${index}`, ttl: 300, tag: 1 }))
    expect(await alice.request('irn_batchPublish', { messages })).toBe(true)
    lists.length = 0
    const page = await bob.request<Page>('irn_batchFetchMessages', { topics: [...Array<string>(100).fill(first), second, first] })
    // In order over the topics as first named: the first topic's two, then the second's.
    expect([page.messages.map((m) => [m.topic, m.message]), page.hasMore]).toEqual([
      [
        [first, 'm0'],
        [first, 'm2'],
        [second, 'm1'],
      ],
      false,
    ])
    expect(lists).toEqual([first, second])
  })
})
