import { mkdtemp, readdir, stat } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { privateKeyToAccount } from 'viem/accounts'
import { expect, test } from 'vitest'
import { sponsorPaymasterDeployment, tokenPaymasterDeployment } from '../../../contracts/index.js'
import { loadPaymasters } from '../src/index.js'

// The paymasters' keys in the state directory: what keeps their addresses across restarts. The
// deployment itself is tested in devnet.test.ts (startStack) and contracts/*Paymaster.test.ts.

test('default: the first load creates paymasters.json (mode 0600) and the addresses follow its keys; later loads reuse it', async () => {
  const stateDir = await mkdtemp(join(tmpdir(), 'latchkey-paymasters-'))
  const first = await loadPaymasters(stateDir)
  expect(await readdir(stateDir)).toEqual(['paymasters.json'])
  expect((await stat(join(stateDir, 'paymasters.json'))).mode & 0o777).toBe(0o600)
  for (const key of [first.signer, first.owner, first.guarantor]) expect(privateKeyToAccount(key.privateKey).address).toBe(key.address)
  expect(new Set([first.signer.address, first.owner.address, first.guarantor.address]).size).toBe(3)
  const keys = { signer: first.signer.address, owner: first.owner.address }
  expect([first.sponsorPaymaster, first.tokenPaymaster]).toEqual([sponsorPaymasterDeployment(keys).address, tokenPaymasterDeployment(keys).address])
  expect(await loadPaymasters(stateDir)).toEqual(first)
})

test('behavior: stacks starting at once on a new state directory agree on one set of keys', async () => {
  const stateDir = await mkdtemp(join(tmpdir(), 'latchkey-paymasters-'))
  const loads = await Promise.all(Array.from({ length: 8 }, () => loadPaymasters(stateDir)))
  for (const load of loads) expect(load).toEqual(loads[0])
  expect(await readdir(stateDir)).toEqual(['paymasters.json'])
})
