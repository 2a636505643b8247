// The code of signing in and out, loaded by useSignIn with the first call: the page, which only
// renders the sign-in state, never downloads it.
export { signIn, signOut } from '@latchkey/core'
