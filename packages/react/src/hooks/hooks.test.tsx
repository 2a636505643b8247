// @vitest-environment happy-dom

import { CancelledError, connect, createClient, createMemoryStorage, injected, UserRejectedRequestError } from '@latchkey/core'
import { createDevWallet } from '@latchkey/core/dev'
import { act, renderHook, waitFor } from '@testing-library/react'
import type { ReactNode } from 'react'
import { privateKeyToAddress } from 'viem/accounts'
import { describe, expect, test } from 'vitest'
import { anvilKeys, testChains } from '../../../../test/chains.js'
import { createRecordingLogger } from '../../../../test/setup.js'
import { LatchkeyProvider } from '../LatchkeyProvider.js'
import { useAccount } from './useAccount.js'
import { useChainId } from './useChainId.js'
import { useLatchkeyContext } from './useClient.js'
import { useConnect } from './useConnect.js'
import { useRead } from './useRead.js'
import { useSignMessage } from './useSignMessage.js'

const address = privateKeyToAddress(anvilKeys[0])

function setup(decide: () => Promise<boolean> = async () => true) {
  const wallet = createDevWallet({ privateKey: anvilKeys[0], chains: testChains(), approve: decide })
  const client = createClient({
    chains: testChains(),
    storage: createMemoryStorage(),
    logger: createRecordingLogger(),
    window: new EventTarget(),
    connectors: [injected({ id: 'dev', name: 'Dev Wallet', provider: wallet })],
  })
  const wrapper = ({ children }: { children: ReactNode }) => <LatchkeyProvider client={client}>{children}</LatchkeyProvider>
  return { client, wallet, wrapper }
}

describe('state hooks', () => {
  test('default: useAccount and useChainId follow connect, account change and chain change', async () => {
    const { client, wallet, wrapper } = setup()
    const { result } = renderHook(() => ({ account: useAccount(), chainId: useChainId() }), { wrapper })
    expect(result.current.account).toMatchObject({ status: 'disconnected', address: undefined })
    await act(() => connect(client, { connector: 'dev' }))
    expect(result.current.account).toMatchObject({ status: 'connected', address, chainId: 31337 })
    const other = privateKeyToAddress(anvilKeys[9])
    act(() => wallet.emit('accountsChanged', [other]))
    expect(result.current.account.address).toBe(other)
    act(() => wallet.emit('chainChanged', '0x7a6a'))
    expect(result.current.chainId).toBe(31338)
    expect(result.current.account.chain?.name).toBe('Anvil B')
  })
})

describe('useConnect', () => {
  test('default: pending then success', async () => {
    const { wrapper } = setup()
    const { result } = renderHook(() => ({ connect: useConnect(), account: useAccount() }), { wrapper })
    await act(() => result.current.connect.connect({ connector: 'dev' }))
    expect(result.current.connect.status).toBe('success')
    expect(result.current.connect.data).toEqual({ accounts: [address], chainId: 31337 })
    expect(result.current.account.isConnected).toBe(true)
  })

  test('error: rejection is a typed error in state, status error', async () => {
    const { wrapper } = setup(async () => false)
    const { result } = renderHook(() => useConnect(), { wrapper })
    await act(() => result.current.connect({ connector: 'dev' }).catch(() => {}))
    expect(result.current.status).toBe('error')
    expect(result.current.error).toBeInstanceOf(UserRejectedRequestError)
  })

  test('behavior: cancel ends the wait with CancelledError', async () => {
    const { wrapper } = setup(() => new Promise(() => {}))
    const { result } = renderHook(() => ({ connect: useConnect(), account: useAccount() }), { wrapper })
    let pending: Promise<unknown> = Promise.resolve()
    act(() => {
      pending = result.current.connect.connect({ connector: 'dev' }).catch((e: unknown) => e)
    })
    await waitFor(() => expect(result.current.connect.isPending).toBe(true))
    expect(result.current.account.status).toBe('connecting')
    act(() => result.current.connect.cancel())
    expect(await pending).toBeInstanceOf(CancelledError)
    await waitFor(() => expect(result.current.account.status).toBe('disconnected'))
  })
})

describe('action hooks', () => {
  test('default: useSignMessage records the signature', async () => {
    const { client, wrapper } = setup()
    const { result } = renderHook(() => useSignMessage(), { wrapper })
    await act(() => connect(client, { connector: 'dev' }))
    await act(() => result.current.signMessage({ message: 'hi' }))
    expect(result.current.data).toMatch(/^0x[0-9a-f]{130}$/)
    expect(result.current.status).toBe('success')
  })
})

describe('modals', () => {
  test('behavior: a modal closing itself late (after an await) leaves a modal opened since open', async () => {
    const { wrapper } = setup()
    const { result } = renderHook(() => useLatchkeyContext(), { wrapper })
    act(() => result.current.openModal('account'))
    // The account modal's Disconnect resolved after the user opened the connect modal.
    act(() => result.current.openModal('connect'))
    act(() => result.current.closeModal('account'))
    expect(result.current.modal).toBe('connect')
    act(() => result.current.closeModal('connect'))
    expect(result.current.modal).toBeUndefined()
    act(() => result.current.openModal('account'))
    act(() => result.current.closeModal())
    expect(result.current.modal).toBeUndefined()
  })
})

describe('reads', () => {
  test('behavior: what was read for the old keys never shows beside new ones, not even in the render where they change', async () => {
    const seen: (string | undefined)[] = []
    const { result, rerender } = renderHook(
      ({ id }: { id: string }) => {
        // The new key's read never answers: only the old key's answer could show for it.
        const state = useRead([id], true, () => (id === 'a' ? Promise.resolve(`read for ${id}`) : new Promise<string>(() => {})))
        seen.push(state.data === undefined ? undefined : `${id}: ${state.data}`)
        return state
      },
      { initialProps: { id: 'a' } },
    )
    await waitFor(() => expect(result.current.data).toBe('read for a'))
    seen.length = 0
    rerender({ id: 'b' })
    expect(seen).toEqual(seen.map(() => undefined))
    expect(seen.length).toBeGreaterThan(0)
    expect(result.current).toMatchObject({ data: undefined, status: 'pending', isPending: true })
  })
})
