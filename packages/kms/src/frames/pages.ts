// The frames' HTML. The configuration a page needs (its name, the parent origins, the signer
// key) is written into meta tags here, so the page fetches nothing; scripts and styles are
// separate files of this origin, so the CSP needs no 'unsafe-inline'.

/**
 * The frame pages, by path. `auth` keeps a sign-in credential for the page (@turnkey/iframe-stamper's
 * auth frame); `recovery` opens the code the user types into it and stamps only a recovery's requests;
 * `consent` holds the wallet's signing key and stamps what the user approves there.
 */
export const FRAME_PAGES = ['auth', 'recovery', 'export', 'import', 'consent'] as const
export type FramePage = (typeof FRAME_PAGES)[number]

/** A chain the consent frame may read: its id and JSON-RPC url. */
export type FrameChain = { readonly id: number; readonly rpcUrl: string }

/**
 * A paymaster the app runs on one chain: `sponsor` pays the gas itself ("sponsored by APP"),
 * `token` charges it in a token (OpenZeppelin PaymasterERC20). The consent frame names these by
 * kind and any other paymaster as a stranger.
 */
export type FramePaymaster = { readonly chainId: number; readonly kind: 'sponsor' | 'token'; readonly address: string }

export type PageParameters = {
  page: FramePage
  parentOrigins: readonly string[]
  /** Uncompressed hex. */
  signerPublicKey: string
  /** The signer's next (or previous) key while it rotates, uncompressed hex: the pages accept its bundles too. */
  nextSignerPublicKey?: string | undefined
  /** Consent frame: the chains it reads and simulates on (id → JSON-RPC url), from the kms's settings. */
  chains?: readonly FrameChain[] | undefined
  /** Consent frame: the batch executor, the only EIP-7702 delegate and batch target it signs for. */
  executor?: string | undefined
  /** Consent frame: the app's paymasters per chain, from the kms's settings. */
  paymasters?: readonly FramePaymaster[] | undefined
  /** Consent frame: the app's name, as "Network fee: sponsored by APP" reads it. */
  appName?: string | undefined
  /** Consent frame: the kms's key for second-factor codes (mfa/codeKey.ts), uncompressed hex; without it the frame takes no code. */
  mfaCodePublicKey?: string | undefined
  /** Import frame: what the user types. Default `mnemonic`. */
  secret?: 'mnemonic' | 'private-key' | undefined
}

/** The digits of a sign-in code the consent frame asks for (browser/consentOtp.ts OTP_DIGITS). */
const OTP_LENGTH = 6

const escapeHtml = (text: string) => text.replace(/[&<>"']/g, (char) => `&#${char.charCodeAt(0)};`)

const titles: Record<FramePage, string> = {
  auth: 'Latchkey sign-in',
  recovery: 'Latchkey recovery',
  export: 'Latchkey export',
  import: 'Latchkey import',
  consent: 'Latchkey confirmation',
}

function body(parameters: PageParameters): string {
  switch (parameters.page) {
    case 'recovery':
      return `<main>
<label id="code-label" class="label" for="code">Recovery code</label>
<textarea id="code" rows="3" autocomplete="one-time-code" autocapitalize="none" spellcheck="false" aria-describedby="hint"></textarea>
<p id="hint" class="hint">Paste the code from the email. It stays in this frame: the app never sees it.</p>
<p id="error" class="error" role="alert" hidden></p>
</main>`
    case 'auth':
      return `<main>
<p class="visually-hidden">This frame keeps a sign-in key for the app that embeds it. There is nothing to do here.</p>
</main>`
    case 'export':
      return `<main>
<p id="status" class="status" role="status">Waiting for the export…</p>
<section id="secret" class="secret" hidden>
<h1 id="secret-label" class="label">Secret recovery phrase</h1>
<ol id="words" class="words" aria-labelledby="secret-label" hidden></ol>
<code id="key" class="key" aria-labelledby="secret-label" hidden></code>
<p class="warning">Anyone who has this can take everything it holds. Write it down, keep it offline and never share it.</p>
</section>
<p id="error" class="error" role="alert" hidden></p>
</main>`
    case 'consent':
      return `<main class="consent">
<p class="visually-hidden" data-i18n="frameIntro">This frame keeps the wallet's signing key for the app that embeds it and asks you before it signs.</p>
<div id="review" class="review split" role="dialog" aria-modal="true" aria-labelledby="review-title" aria-describedby="review-origin" hidden>
<div id="review-body" class="review-body">
<h1 id="review-title" class="label" tabindex="-1"></h1>
<p id="review-origin" class="status"></p>
<ul id="review-warnings" class="warnings" aria-label="Warnings" data-i18n="warnings" data-i18n-attribute="aria-label" hidden></ul>
<dl id="review-rows" class="rows" hidden></dl>
<div id="review-tree" class="tree" hidden></div>
<details id="review-raw-box" class="raw" hidden><summary data-i18n="rawData">Raw data</summary><pre id="review-raw"></pre></details>
<p id="review-simulation" class="status" role="status" hidden></p>
<p id="review-refusal" class="error" role="alert" hidden></p>
</div>
<div class="actions">
<button id="reject" type="button" class="secondary" data-i18n="reject">Reject</button>
<button id="approve" type="button" class="primary" data-i18n="approve" disabled>Approve</button>
</div>
</div>
<div id="otp" class="review" role="dialog" aria-modal="true" aria-labelledby="otp-title" aria-describedby="otp-sent" hidden>
<h1 id="otp-title" class="label" data-i18n="otpTitle">Enter your sign-in code</h1>
<p id="otp-sent" class="status">We sent a ${OTP_LENGTH}-digit code to <strong id="otp-email"></strong>. It stays in this secure window: the app only receives it encrypted.</p>
<label for="otp-code" data-i18n="otpLabel">Sign-in code</label>
<input id="otp-code" class="code" type="text" inputmode="numeric" autocomplete="one-time-code" maxlength="${OTP_LENGTH}" spellcheck="false" aria-describedby="otp-error">
<p id="otp-error" class="error" role="alert" hidden></p>
<div class="actions">
<button id="otp-cancel" type="button" class="secondary" data-i18n="cancel">Cancel</button>
<button id="otp-verify" type="button" class="primary" data-i18n="verify">Verify</button>
</div>
</div>
<div id="mfa" class="review" role="dialog" aria-modal="true" aria-labelledby="mfa-title" aria-describedby="mfa-intro" hidden>
<h1 id="mfa-title" class="label"></h1>
<p id="mfa-intro" class="status"></p>
<div id="mfa-setup" class="mfa-setup" role="group" aria-labelledby="mfa-secret-label" hidden>
<div id="mfa-qr" class="qr"></div>
<p id="mfa-secret-label" class="field-label" data-i18n="mfaSecret">Secret</p>
<p id="mfa-secret" class="secret-text"></p>
</div>
<div id="mfa-entry">
<label id="mfa-code-label" for="mfa-code">Authentication code</label>
<input id="mfa-code" class="code" type="text" inputmode="numeric" autocomplete="one-time-code" maxlength="6" spellcheck="false" aria-describedby="mfa-error">
<button id="mfa-toggle" type="button" class="link" hidden>Use a recovery code</button>
</div>
<p id="mfa-error" class="error" role="alert" hidden></p>
<ol id="mfa-codes" class="recovery-codes" aria-label="Recovery codes" data-i18n="mfaCodes" data-i18n-attribute="aria-label" hidden></ol>
<div class="actions">
<button id="mfa-cancel" type="button" class="secondary" data-i18n="cancel">Cancel</button>
<button id="mfa-verify" type="button" class="primary" data-i18n="verify">Verify</button>
</div>
</div>
</main>`
    case 'import': {
      const key = parameters.secret === 'private-key'
      return `<main>
<label id="secret-label" class="label" for="secret">${key ? 'Private key' : 'Secret recovery phrase'}</label>
<textarea id="secret" rows="4" autocomplete="off" autocapitalize="none" spellcheck="false" aria-describedby="hint"></textarea>
<p id="hint" class="hint">${
        key ? '64 hexadecimal characters.' : 'Your 12 to 24 words, separated by spaces.'
      } It is encrypted inside this frame; the app only receives the encrypted copy.</p>
<p id="error" class="error" role="alert" hidden></p>
</main>`
    }
  }
}

function consentMeta(parameters: PageParameters): string {
  const chains = (parameters.chains ?? []).map((chain) => `${chain.id}=${chain.rpcUrl}`).join(' ')
  const paymasters = (parameters.paymasters ?? []).map((paymaster) => `${paymaster.chainId}=${paymaster.kind}:${paymaster.address}`).join(' ')
  return `<meta name="latchkey-chains" content="${escapeHtml(chains)}">
<meta name="latchkey-executor" content="${escapeHtml(parameters.executor ?? '')}">
<meta name="latchkey-paymasters" content="${escapeHtml(paymasters)}">
<meta name="latchkey-app-name" content="${escapeHtml(parameters.appName ?? '')}">
<meta name="latchkey-mfa-code-key" content="${escapeHtml(parameters.mfaCodePublicKey ?? '')}">
`
}

/**
 * The HTML of one frame page.
 *
 * @example
 * framePage({ page: 'export', parentOrigins: ['http://localhost:5173'], signerPublicKey })
 */
export function framePage(parameters: PageParameters): string {
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="latchkey-frame" content="${parameters.page}">
<meta name="latchkey-parent-origins" content="${escapeHtml(parameters.parentOrigins.join(' '))}">
<meta name="latchkey-signer-public-key" content="${escapeHtml([parameters.signerPublicKey, parameters.nextSignerPublicKey ?? ''].join(' ').trim())}">
${parameters.page === 'consent' ? consentMeta(parameters) : ''}<title>${titles[parameters.page]}</title>
<link rel="stylesheet" href="/assets/frames.css">
<script type="module" src="/assets/${parameters.page}.js"></script>
</head>
<body>
${body(parameters)}
</body>
</html>
`
}
