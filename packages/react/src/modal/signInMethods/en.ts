/**
 * The "Sign-in methods" section's English texts: the source of its keys. They load with the
 * section (the account modal's lazy part), not with the first-click catalogues; every other
 * locale is typed `LinkingMessages`, so a missing or extra key fails the typecheck.
 */
export const en = {
  signInMethods: 'Sign-in methods',
  loadingMethods: 'Loading sign-in methods…',
  signInToManage: 'Sign in to the app to see and change how you sign in.',
  kindEmail: 'Email',
  kindPasskey: 'Passkey',
  kindWallet: 'Wallet',
  kindOAuth: 'Social account',
  linkedOn: 'Linked {date}',
  remove: 'Remove',
  removeMethod: 'Remove {label}',
  onlyMethod: 'This is your only way to sign in. Add another before removing it.',
  addMethod: 'Add a sign-in method',
  emailToLink: 'Email address to add',
  sendCode: 'Send code',
  typeCodeInFrame: 'Type the code sent to {email} in the dialog.',
  signInWalletToLink: 'Sign the message in {name}',
  linking: 'Linking…',
  methodLinked: '{label} linked. You can now sign in with it.',
  removing: 'Removing…',
  methodRemoved: '{label} removed.',
  secondFactor: 'Second factor',
  mfaOff: 'No second factor is set up.',
  mfaOn: 'An authenticator app is set up.',
  setUpTotp: 'Set up an authenticator app',
  settingUpTotp: 'Setting up the authenticator app…',
  totpEnrolled: 'Authenticator app set up. Keep your recovery codes somewhere safe.',
  methodsStatus: 'Sign-in methods status',
  guestWarning:
    'This guest wallet lives in this browser only. Clearing this browser’s data, or a day passing, loses it, unless you add an email, a passkey or a social login.',
  createGuestWallet: 'Create a guest wallet',
  creatingGuest: 'Creating your guest wallet…',
  mfaNeeded: 'This change needs your second factor. Verify it, and the change is tried once more.',
  verifyMfa: 'Verify',
  verifyingMfa: 'Verify in the dialog…',
}

/** A complete catalogue of the section: every key of the English one, each a string. */
export type LinkingMessages = { readonly [K in keyof typeof en]: string }
export type LinkingKey = keyof LinkingMessages
