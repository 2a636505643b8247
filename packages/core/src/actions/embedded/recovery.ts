import type { Client } from '../../createClient.js'
import type { ConnectReturnType } from '../connect.js'
import { connectSignedIn, type EmbeddedTarget, runFlow } from './internal.js'

/** SPEC §3: by an emailed API key ('email'), or a new passkey registered with an emailed recover-user key ('passkey'). */
export type RecoveryType = 'email' | 'passkey'

export type StartRecoveryParameters = EmbeddedTarget & {
  email: string
  recoveryType: RecoveryType
  /**
   * Where the recovery frame mounts, shown to the user: they paste the emailed code into it, and it
   * keeps the credential; the page never sees either.
   */
  container: HTMLElement
}

/** A started recovery: `finishRecovery` takes it once the user pasted the code into the frame; `close` removes the frame. */
export type Recovery = { recoveryType: RecoveryType; finish(): Promise<unknown>; close(): void }

/**
 * Starts "Recover account": the email carries a code valid 900 s (SPEC §5). Errors:
 * CannotProceedError (no account with this email, rate limit).
 *
 * @example
 * const recovery = await startRecovery(client, { email, recoveryType: 'passkey', container })
 */
export function startRecovery(client: Client, parameters: StartRecoveryParameters): Promise<Recovery> {
  return runFlow(client, 'startRecovery', parameters, async (flows) => {
    const started = await flows.startRecovery(parameters.container, parameters.email.trim(), parameters.recoveryType)
    return { recoveryType: parameters.recoveryType, finish: started.finish, close: started.close }
  })
}

export type FinishRecoveryParameters = EmbeddedTarget & { recovery: Recovery }

/**
 * Redeems the code the user pasted into the recovery frame and connects: by email, a recovery session (1800 s by default, SPEC §5);
 * after a lost passkey, the browser's prompt creates a new passkey, which signs the user in.
 * Errors: InvalidCodeError (not the right credential, or older than 900 s), WebauthnCeremonyError.
 *
 * @example
 * await finishRecovery(client, { recovery })
 */
export function finishRecovery(client: Client, parameters: FinishRecoveryParameters): Promise<ConnectReturnType> {
  return runFlow(client, 'finishRecovery', parameters, async (_flows, connector) => {
    await parameters.recovery.finish()
    parameters.recovery.close()
    return connectSignedIn(client, connector)
  })
}
