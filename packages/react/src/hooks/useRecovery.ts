import { type ConnectReturnType, finishRecovery, type Recovery, type RecoveryType, startRecovery } from '@latchkey/core'
import { useEffect, useRef } from 'react'
import { type ActionState, useAction } from './useAction.js'
import { useClient } from './useClient.js'

/**
 * "Recover account": `start` emails a code (by email, or for a lost passkey) and mounts the
 * recovery frame in `container`, where the user pastes it (show the container); `finish` redeems
 * what they pasted and connects (after a lost passkey, the browser's prompt creates the new passkey
 * first).
 *
 * @example
 * const { start, finish } = useRecovery()
 * await start({ email, recoveryType: 'passkey', container }); await finish()
 */
export function useRecovery(): {
  start(parameters: { email: string; recoveryType: RecoveryType; container: HTMLElement }): Promise<Recovery>
  finish(): Promise<ConnectReturnType>
  starting: ActionState<Recovery>
  finishing: ActionState<ConnectReturnType>
} {
  const client = useClient()
  const current = useRef<Recovery>(undefined)
  useEffect(() => () => current.current?.close(), [])
  const [start, starting] = useAction(async (parameters: { email: string; recoveryType: RecoveryType; container: HTMLElement }) => {
    current.current?.close()
    current.current = await startRecovery(client, parameters)
    return current.current
  })
  const [finish, finishing] = useAction(() => finishRecovery(client, { recovery: current.current! }))
  return { start, finish, starting, finishing }
}
