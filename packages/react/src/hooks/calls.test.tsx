// @vitest-environment happy-dom

import { connect, createClient, createMemoryStorage, injected } from '@latchkey/core'
import { createDevWallet } from '@latchkey/core/dev'
import { act, renderHook, waitFor } from '@testing-library/react'
import type { ReactNode } from 'react'
import { createPublicClient, http, parseEther, toHex } from 'viem'
import { generatePrivateKey, privateKeyToAddress } from 'viem/accounts'
import { beforeAll, describe, expect, test } from 'vitest'
import { testChains } from '../../../../test/chains.js'
import { createRecordingLogger } from '../../../../test/setup.js'
import { LatchkeyProvider } from '../LatchkeyProvider.js'
import { useCallsStatus } from './useCallsStatus.js'
import { useCapabilities } from './useCapabilities.js'
import { useSendCalls } from './useSendCalls.js'
import { useWaitForCallsStatus } from './useWaitForCallsStatus.js'

// The EIP-5792 hooks over a real dev wallet on anvil; a fresh funded key keeps nonces apart.
const key = generatePrivateKey()
const chains = testChains()
const chainA = createPublicClient({ transport: http(chains[0].rpcUrls.default.http[0]) })
beforeAll(async () => {
  await chainA.request({ method: 'anvil_setBalance' as never, params: [privateKeyToAddress(key), toHex(10n ** 20n)] as never })
})

async function setup() {
  const wallet = createDevWallet({ privateKey: key, chains })
  const client = createClient({
    chains,
    storage: createMemoryStorage(),
    logger: createRecordingLogger(),
    window: new EventTarget(),
    connectors: [injected({ id: 'dev', name: 'Dev Wallet', provider: wallet })],
  })
  await connect(client, { connector: 'dev' })
  const wrapper = ({ children }: { children: ReactNode }) => <LatchkeyProvider client={client}>{children}</LatchkeyProvider>
  return { wrapper }
}

describe('EIP-5792 hooks', () => {
  test('default: useSendCalls sends, useWaitForCallsStatus follows to confirmed, useCallsStatus agrees', async () => {
    const { wrapper } = await setup()
    const alice = privateKeyToAddress(generatePrivateKey())
    const bob = privateKeyToAddress(generatePrivateKey())
    const { result } = renderHook(
      () => {
        const send = useSendCalls()
        return { send, wait: useWaitForCallsStatus({ id: send.data?.id }), status: useCallsStatus({ id: send.data?.id }) }
      },
      { wrapper },
    )
    expect(result.current.wait.status).toBe('idle')
    await act(() =>
      result.current.send.sendCalls({
        calls: [
          { to: alice, value: parseEther('0.001') },
          { to: bob, value: parseEther('0.001') },
        ],
      }),
    )
    expect(result.current.send.status).toBe('success')
    await waitFor(() => expect(result.current.wait.status).toBe('success'))
    expect(result.current.wait.data).toMatchObject({ id: result.current.send.data?.id, status: 'success', statusCode: 200 })
    expect(result.current.wait.data?.receipts).toHaveLength(2)
    await waitFor(() => expect(result.current.status.status).toBe('success'))
    act(() => result.current.status.refetch())
    await waitFor(() => expect(result.current.status.data?.status).toBe('success'))
    expect(await chainA.getBalance({ address: bob })).toBe(parseEther('0.001'))
  })

  test('behavior: useCapabilities reads the wallet once connected', async () => {
    const { wrapper } = await setup()
    const { result } = renderHook(() => useCapabilities({ chainId: 31337 }), { wrapper })
    await waitFor(() => expect(result.current.status).toBe('success'))
    expect(result.current.data).toEqual({ atomic: { status: 'unsupported' } })
  })
})
