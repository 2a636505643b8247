import { spawnSync } from 'node:child_process'
import { createECDH } from 'node:crypto'
import { fileURLToPath } from 'node:url'
import { expect, test } from 'vitest'
import { generateApiKeyPair } from '../src/keys.js'

// Tests make thousands of key pairs with generateApiKeyPair, and operators make theirs with
// `latchkey-kms generate-keys`. Made by generateKeyPairSync and exported as a JWK, a pair could
// hang its process for good: Node 20 deadlocks when a garbage collection during the export frees
// the generation's job, which takes the lock the export holds. A vitest worker stuck that way
// never reaches its test timeout, so the loop runs in a child process with a deadline.

const keys = fileURLToPath(new URL('../src/keys.ts', import.meta.url))

test('behavior: 20,000 key pairs with the garbage collector busy all come back (the process never hangs)', () => {
  const script = `
    const { generateApiKeyPair } = await import(${JSON.stringify(keys)})
    const garbage = []
    for (let i = 0; i < 20000; i++) {
      generateApiKeyPair()
      garbage.push('x'.repeat(100))
      if (garbage.length > 1000) garbage.length = 0
    }
    console.log('made 20000')
  `
  const child = spawnSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], { encoding: 'utf8', timeout: 20_000 })
  expect({ signal: child.signal, status: child.status, stdout: child.stdout.trim() }).toEqual({ signal: null, status: 0, stdout: 'made 20000' })
})

test('default: a 32-byte private key and its compressed public key, in hex', () => {
  for (let i = 0; i < 200; i++) {
    const { apiPrivateKey, apiPublicKey } = generateApiKeyPair()
    expect(apiPrivateKey).toMatch(/^[0-9a-f]{64}$/)
    const ecdh = createECDH('prime256v1')
    ecdh.setPrivateKey(apiPrivateKey, 'hex')
    expect(apiPublicKey).toBe(ecdh.getPublicKey('hex', 'compressed'))
  }
})
