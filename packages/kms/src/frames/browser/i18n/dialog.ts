// The consent frame's own texts in English (the page, the review, sign-in code and second-factor
// dialogs): with en.ts, the English catalogue. A chunk of its own, downloaded when English is the
// active locale, as any other locale's catalogue is.

export const dialog = {
  // The page and the review dialog.
  frameIntro: "This frame keeps the wallet's signing key for the app that embeds it and asks you before it signs.",
  requestedBy: 'Requested by {origin}',
  warnings: 'Warnings',
  rawData: 'Raw data',
  reject: 'Reject',
  approve: 'Approve',
  simulating: 'Simulating…',
  simulationFailed: 'The simulation failed.',
  simulationNoChanges: 'The simulation shows no asset changes.',
  dataBytes: '{count} bytes of data',
  cannotSign: 'This request cannot be signed',
  // The sign-in code dialog.
  otpTitle: 'Enter your sign-in code',
  otpSent: 'We sent a {digits}-digit code to {email}. It stays in this secure window: the app only receives it encrypted.',
  otpLabel: 'Sign-in code',
  otpInvalid: 'Enter the {digits}-digit code from the email.',
  cancel: 'Cancel',
  verify: 'Verify',
  done: 'Done',
  // The second-factor dialog.
  mfaVerifyTitle: 'Confirm it is you',
  mfaVerifyIntro: 'Enter the 6-digit code from your authenticator app. It stays in this secure window.',
  mfaEnrolTitle: 'Set up your authenticator app',
  mfaEnrolIntro: 'Scan the QR code with your authenticator app, or type the secret into it. Then enter the 6-digit code it shows.',
  mfaQr: 'QR code to add this account to your authenticator app',
  mfaSecret: 'Secret',
  mfaCodeLabel: 'Authentication code',
  mfaRecoveryLabel: 'Recovery code',
  mfaUseRecovery: 'Use a recovery code',
  mfaUseApp: 'Use your authenticator app',
  mfaInvalidRecovery: 'Enter a recovery code: three groups of four letters and digits (xxxx-xxxx-xxxx).',
  mfaInvalidCode: 'Enter the 6-digit code from your authenticator app.',
  mfaCodesTitle: 'Save your recovery codes',
  mfaCodesIntro:
    'Save these codes somewhere safe. Each one works once, in place of a code from your authenticator app, if you lose it. They are not shown again.',
  mfaCodes: 'Recovery codes',
} as const

export default dialog
