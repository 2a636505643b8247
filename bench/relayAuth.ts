/**
 * The relay's connection-token check (an EdDSA JWT per connection): the portable check on
 * @noble/curves, which browsers use, beside the relay's on node:crypto (OpenSSL), in the same
 * process on the same tokens, in interleaved rounds. The figure is CPU per connection: when every
 * client reconnects at once (after a deploy), that is what a node spends before its first message.
 *
 *   npm run bench:relay-auth [-- --tokens 2000 --rounds 5]
 */
import { randomBytes } from 'node:crypto'
import { performance } from 'node:perf_hooks'
import { signRelayJwt, verifyRelayJwt } from '@latchkey/walletconnect'
import { verifyEd25519 } from '../packages/relay/src/ed25519.js'
import { wholeNumberArg as arg } from './args.js'

const count = arg('--tokens', 2000)
const rounds = arg('--rounds', 5)
const aud = 'ws://relay.bench'
// Every token from its own client, as after a reconnect storm: no key is seen twice.
const tokens = Array.from({ length: count }, () => signRelayJwt({ seed: randomBytes(32).toString('hex'), aud }))
const now = Math.floor(Date.now() / 1000)

/** Microseconds per token for one way of checking the signature. */
function run(verifySignature: typeof verifyEd25519 | undefined): number {
  const started = performance.now()
  for (const token of tokens) verifyRelayJwt(token, { now, audiences: [aud], verifySignature })
  return ((performance.now() - started) * 1000) / tokens.length
}

const noble: number[] = []
const node: number[] = []
for (let round = 0; round < rounds; round++) {
  noble.push(run(undefined))
  node.push(run(verifyEd25519))
}
const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!
console.log(`relay token check, ${count} tokens from distinct clients, ${rounds} interleaved rounds (median µs per token)`)
console.log(`  @noble/curves (the default, as in browsers)  ${median(noble).toFixed(0).padStart(6)} µs`)
console.log(`  node:crypto (the relay)                      ${median(node).toFixed(0).padStart(6)} µs   ${(median(noble) / median(node)).toFixed(1)}× less`)
