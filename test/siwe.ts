import type { SignInAdapter } from '@latchkey/core'
import type { Cacao } from '@latchkey/walletconnect'
import { formatAuthMessage } from '@latchkey/walletconnect/cacao'
import { createPublicClient, getAddress, http } from 'viem'
import { parseSiweMessage, verifySiweMessage } from 'viem/siwe'
import { testChains } from './chains.js'

/**
 * A sign-in adapter that verifies for real, in the test process: single-use nonces, viem's SIWE
 * verification against anvil chain A. `calls` records what the client asked of it.
 */
export function verifyingAdapter(domain = 'localhost') {
  const nonces = new Set<string>()
  const calls: string[] = []
  let counter = 0
  const publicClient = createPublicClient({ chain: testChains()[0], transport: http() })
  const adapter: SignInAdapter = {
    async getNonce() {
      calls.push('getNonce')
      const nonce = `nonce${++counter}abcdefgh`
      nonces.add(nonce)
      return nonce
    },
    async verify({ message, signature, walletKind }) {
      calls.push('verify')
      const fields = parseSiweMessage(message)
      if (!fields.nonce || !nonces.delete(fields.nonce)) throw new Error('unknown nonce')
      if (!(await verifySiweMessage(publicClient, { message, signature, domain }))) throw new Error('bad signature')
      return { address: getAddress(fields.address!), chainId: fields.chainId, walletKind }
    },
    async verifyCacao({ cacao, walletKind }) {
      calls.push('verifyCacao')
      const { p, s } = cacao as Cacao
      const message = formatAuthMessage({ payload: p, iss: p.iss })
      return adapter.verify({ message, signature: s.s as `0x${string}`, walletKind }).finally(() => calls.splice(calls.lastIndexOf('verify'), 1))
    },
    async signOut() {
      calls.push('signOut')
    },
  }
  return { adapter, calls }
}
