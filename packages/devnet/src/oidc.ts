import { createHash, generateKeyPairSync, randomBytes } from 'node:crypto'
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http'
import Provider from 'oidc-provider'
import { defineInstance, type Instance, PortInUseError } from './instance.js'

// A real OpenID provider (oidc-provider) playing Google and Apple on one port, so that social
// sign-in runs and is tested offline. Each issuer lives under its own path (/google, /apple) with
// its own signing key; its sign-in page asks only for an email: any address signs in as that test
// user, and the same address is always the same user (the same `sub`).

/** The issuers the local provider plays. */
export const OIDC_PROVIDERS = ['google', 'apple'] as const
export type OidcProviderName = (typeof OIDC_PROVIDERS)[number]

export type OidcInstanceParameters = {
  port: number
  /** The client id the app uses with both issuers. */
  clientId: string
  /** Where the issuers may send the browser back (the app's callback pages). */
  redirectUris: readonly string[]
}

/** What an app needs to know of one issuer. */
export type OidcIssuer = { readonly issuer: string; readonly clientId: string; readonly authorizationEndpoint: string }

const escapeHtml = (text: string) => text.replace(/[&<>"']/g, (character) => `&#${character.charCodeAt(0)};`)

/** The sign-in page of a local issuer: one textbox "Email" and a button "Sign in". */
function signInPage(title: string, action: string): string {
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>${escapeHtml(title)}</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<style>body{font:16px system-ui,sans-serif;max-width:22rem;margin:4rem auto;padding:0 1rem}label,input,button{display:block;width:100%;box-sizing:border-box}input,button{margin:.5rem 0 1rem;padding:.6rem;font:inherit}</style></head>
<body><main><h1>${escapeHtml(title)}</h1><p>A local test issuer: any email signs in as that test user.</p>
<form method="post" action="${escapeHtml(action)}"><label for="email">Email</label><input id="email" name="email" type="email" autocomplete="email" required autofocus>
<button type="submit">Sign in</button></form></main></body></html>`
}

/** The stable subject of a test user: the same email is the same user of an issuer. */
export const testSubject = (provider: OidcProviderName, email: string) =>
  createHash('sha256').update(`${provider}:${email.trim().toLowerCase()}`).digest('hex').slice(0, 32)

function issuerConfiguration(name: OidcProviderName, parameters: OidcInstanceParameters, emails: Map<string, string>) {
  const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 })
  const jwk = { ...privateKey.export({ format: 'jwk' }), kid: `${name}-${randomBytes(4).toString('hex')}`, use: 'sig', alg: 'RS256' }
  return {
    clients: [
      {
        client_id: parameters.clientId,
        token_endpoint_auth_method: 'none',
        redirect_uris: [...parameters.redirectUris],
        response_types: ['code'],
        grant_types: ['authorization_code'],
      },
    ],
    jwks: { keys: [jwk] },
    cookies: { keys: [randomBytes(32).toString('hex')] },
    claims: { openid: ['sub'], email: ['email', 'email_verified'] },
    // The ID token carries the email, as Google's and Apple's do.
    conformIdTokenClaims: false,
    features: { devInteractions: { enabled: false } },
    pkce: { required: () => true },
    interactions: { url: (_ctx: unknown, interaction: { uid: string }) => `/${name}/interaction/${interaction.uid}` },
    async findAccount(_ctx: unknown, id: string) {
      const email = emails.get(id)
      return email ? { accountId: id, claims: async () => ({ sub: id, email, email_verified: true }) } : undefined
    },
  }
}

async function formBody(request: IncomingMessage): Promise<URLSearchParams> {
  const chunks: Buffer[] = []
  let size = 0
  for await (const chunk of request) {
    size += (chunk as Buffer).length
    if (size > 4096) throw new Error('form too large')
    chunks.push(chunk as Buffer)
  }
  return new URLSearchParams(Buffer.concat(chunks).toString('utf8'))
}

/**
 * The local OpenID provider on `port`: issuers `http://localhost:<port>/google` and `/apple`, each
 * with one public client (`clientId`, PKCE, authorization code) for `redirectUris`.
 *
 * @example
 * const oidc = oidcInstance({ port: 8092, clientId: 'latchkey-demo', redirectUris: ['http://localhost:5173/oauth/callback'] })
 * await oidc.start()
 */
export function oidcInstance(parameters: OidcInstanceParameters): Instance & { issuers: Record<OidcProviderName, OidcIssuer> } {
  const host = '127.0.0.1'
  const base = `http://localhost:${parameters.port}`
  let server: Server | undefined
  const issuers = Object.fromEntries(
    OIDC_PROVIDERS.map((name) => [
      name,
      { issuer: `${base}/${name}`, clientId: parameters.clientId, authorizationEndpoint: `${base}/${name}/auth` } satisfies OidcIssuer,
    ]),
  ) as Record<OidcProviderName, OidcIssuer>

  const instance = defineInstance({
    name: 'oidc',
    host,
    port: parameters.port,
    url: base,
    async start() {
      // Test users by subject: whoever signed in with an address since the start.
      const emails = new Map<string, string>()
      const providers = Object.fromEntries(
        OIDC_PROVIDERS.map((name) => [name, new Provider(issuers[name].issuer, issuerConfiguration(name, parameters, emails) as never)]),
      ) as Record<OidcProviderName, Provider>
      const title: Record<OidcProviderName, string> = { google: 'Sign in with Google (local)', apple: 'Sign in with Apple (local)' }

      async function handle(request: IncomingMessage, response: ServerResponse) {
        const url = new URL(request.url ?? '/', base)
        const [, name, ...rest] = url.pathname.split('/')
        const provider = providers[name as OidcProviderName]
        if (!provider) {
          response.writeHead(404).end()
          return
        }
        if (rest[0] === 'interaction' && rest[1]) {
          const details = await provider.interactionDetails(request, response)
          if (request.method === 'GET') {
            response.writeHead(200, { 'content-type': 'text/html; charset=utf-8', 'cache-control': 'no-store' })
            response.end(signInPage(title[name as OidcProviderName], `/${name}/interaction/${details.uid}`))
            return
          }
          const email = (await formBody(request)).get('email')?.trim().toLowerCase() ?? ''
          if (!/^[^\s@]+@[^\s@]+$/.test(email)) {
            response.writeHead(400, { 'content-type': 'text/plain' }).end('An email address is needed.')
            return
          }
          const accountId = testSubject(name as OidcProviderName, email)
          emails.set(accountId, email)
          const grant = new provider.Grant({ accountId, clientId: String(details.params['client_id']) })
          grant.addOIDCScope('openid email')
          const grantId = await grant.save()
          await provider.interactionFinished(request, response, { login: { accountId }, consent: { grantId } }, { mergeWithLastSubmission: false })
          return
        }
        // The issuer's own routes, under its path.
        request.url = `${url.pathname.slice(name!.length + 1) || '/'}${url.search}`
        provider.callback()(request, response)
      }

      const started = createServer((request, response) => {
        handle(request, response).catch((error: unknown) => {
          if (!response.headersSent) response.writeHead(500, { 'content-type': 'text/plain' })
          response.end(error instanceof Error ? error.message : 'error')
        })
      })
      await new Promise<void>((resolve, reject) => {
        started.once('error', (error: NodeJS.ErrnoException) =>
          reject(error.code === 'EADDRINUSE' ? new PortInUseError({ name: 'oidc', host, port: parameters.port }) : error),
        )
        started.listen(parameters.port, host, () => resolve())
      })
      server = started
    },
    async stop() {
      const running = server
      server = undefined
      if (!running) return
      running.closeAllConnections()
      await new Promise<void>((resolve) => running.close(() => resolve()))
    },
  })
  return Object.assign(instance, { issuers })
}
