import { join } from 'node:path'
import { expect, inject, test } from 'vitest'
import { nativeModulesReady } from './harness/native.js'
import { runOrThrow } from './harness/process.js'

const app = join(inject('consumers'), 'node')

/** Runs a script of apps/node under plain node (no DOM, no loader, no `source` condition) and returns what it printed. */
const node = (...args: string[]) => runOrThrow(process.execPath, args, { cwd: app })

/** What a module exports, as the consumer scripts print it: each name with its `typeof`. */
const shapeOf = (module: Record<string, unknown>) => Object.fromEntries(Object.entries(module).map(([name, value]) => [name, typeof value]))

test.each(['@latchkey/core', '@latchkey/walletconnect', '@latchkey/relay', '@latchkey/kms', '@latchkey/server'])(
  'behavior: import(%j) works in plain Node without a DOM and exports what the source does',
  async (name) => {
    const printed = JSON.parse(await node('exports.mjs', name)) as { dom: unknown; exports: Record<string, string> }
    expect(printed.dom).toEqual({ window: 'undefined', document: 'undefined' })
    // The workspace's own module, through the `source` condition of this test process.
    expect(printed.exports).toEqual(shapeOf(await import(name)))
  },
)

test('behavior: renderToString of <LatchkeyProvider> with <ConnectButton /> gives the button', async () => {
  expect((await node('ssr.mjs')).trim()).toBe('<button type="button" class="lk-button">Connect Wallet</button>')
})

// The compile of the binding runs in the background from the install on: a few minutes on a busy 2-core machine.
test('behavior: the relay opens its SQLite store on the binding npm built from source', { timeout: 600_000 }, async () => {
  await nativeModulesReady(inject('consumers'))
  expect((await node('sqlite.mjs')).trim()).toBe('sqlite store opened, pruned and closed')
})
