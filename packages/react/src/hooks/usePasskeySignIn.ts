import { type ConnectReturnType, type SignUpWithPasskeyParameters, signInWithPasskey, signUpWithPasskey } from '@latchkey/core'
import { type ActionState, useAction } from './useAction.js'
import { useClient } from './useClient.js'

/**
 * Passkey sign-in (`signIn`) and sign-up (`signUp`, a new passkey and wallet) for the embedded
 * wallet; both connect. A sign-up with an email has the user type the code it gets in the consent
 * frame. Errors: WebauthnCeremonyError (its `code`), WebauthnNotSupportedError, InvalidCodeError,
 * UserRejectedRequestError (cancelled in the frame).
 *
 * @example
 * const { signIn, isPending } = usePasskeySignIn()
 */
export function usePasskeySignIn(): ActionState<ConnectReturnType> & {
  signIn(): Promise<ConnectReturnType>
  signUp(parameters: Omit<SignUpWithPasskeyParameters, 'connector'>): Promise<ConnectReturnType>
} {
  const client = useClient()
  const [run, state] = useAction((parameters?: Omit<SignUpWithPasskeyParameters, 'connector'>) =>
    parameters ? signUpWithPasskey(client, parameters) : signInWithPasskey(client),
  )
  return { ...state, signIn: () => run(), signUp: (parameters) => run(parameters) }
}
