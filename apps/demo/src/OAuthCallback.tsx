import { completeOAuthRedirect } from '@latchkey/core'
import { useClient } from '@latchkey/react'
import { useEffect, useState } from 'react'

/**
 * Where Google or Apple send the browser back (/oauth/callback) after a redirect sign-in (the
 * popup case never renders: the callback page, oauthCallback.ts, hands the answer to the opener). Finishes the sign-in,
 * then returns to the page the user started from.
 */
export function OAuthCallback() {
  const client = useClient()
  const [problem, setProblem] = useState<string>()
  useEffect(() => {
    completeOAuthRedirect(client).then(
      (done) => location.replace(done?.returnTo ?? '/'),
      (error: unknown) => setProblem(error instanceof Error ? error.message.split('\n')[0] : String(error)),
    )
  }, [client])
  return (
    <main className="hero">
      <h1>Signing you in…</h1>
      {problem && (
        <p role="alert">
          {problem} <a href="/">Back to the demo</a>
        </p>
      )}
    </main>
  )
}
