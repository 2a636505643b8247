import { postOAuthCallback } from '@latchkey/core'

// The page Google or Apple send the browser back to (/oauth/callback). In the sign-in popup it
// only hands the answer to the demo that opened it, which then closes the popup: a kilobyte
// instead of the whole demo, so the sign-in finishes sooner. After a redirect sign-in (no popup)
// the demo itself loads and finishes it (OAuthCallback.tsx).
if (!postOAuthCallback()) void import('./main.js')
