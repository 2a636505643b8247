import { createHash, createPrivateKey, generateKeyPairSync, randomBytes } from 'node:crypto'
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http'
import Provider from 'oidc-provider'
import { defineInstance, type Instance, PortInUseError } from './instance.js'

// A real OpenID provider (oidc-provider) playing Google and Apple on one port, so that social
// sign-in runs and is tested offline; it plays GitHub and Discord too, as OpenID Connect issuers
// the operator configures (the backend's generic providers, issue 28). "Apple", as Apple does, answers by form_post only. Each issuer lives under its own path (/google, /apple) with
// its own signing key; its sign-in page asks only for an email: any address signs in as that test
// user, and the same address is always the same user (the same `sub`).

/** The issuers the local provider plays. */
export const OIDC_PROVIDERS = ['google', 'apple', 'github', 'discord'] as const
export type OidcProviderName = (typeof OIDC_PROVIDERS)[number]

export type OidcInstanceParameters = {
  port: number
  /** The client id the app uses with both issuers. */
  clientId: string
  /** Where the issuers may send the browser back (the app's callback pages). */
  redirectUris: readonly string[]
  /**
   * The `email_verified` claim of a test user: true by default, as Google and Apple send it; a test
   * of an issuer that sends false, or no claim (undefined), picks it per email.
   */
  emailVerified?: ((email: string) => boolean | undefined) | undefined
}

/** The issuer URL of `name` on the local provider at `port`: tokens name it in `iss`. */
export const oidcIssuerUrl = (port: number, name: OidcProviderName) => `http://localhost:${port}/${name}`

/** What an app needs to know of one issuer. */
export type OidcIssuer = { readonly issuer: string; readonly clientId: string; readonly authorizationEndpoint: string }

const escapeHtml = (text: string) => text.replace(/[&<>"']/g, (character) => `&#${character.charCodeAt(0)};`)

/** The sign-in page of a local issuer: one textbox "Email" and a button "Sign in". */
function signInPage(title: string, action: string): string {
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>${escapeHtml(title)}</title>
<meta name="viewport" content="width=device-width, initial-scale=1"><link rel="icon" href="data:,">
<style>body{font:16px system-ui,sans-serif;max-width:22rem;margin:4rem auto;padding:0 1rem}label,input,button{display:block;width:100%;box-sizing:border-box}input,button{margin:.5rem 0 1rem;padding:.6rem;font:inherit}</style></head>
<body><main><h1>${escapeHtml(title)}</h1><p>A local test issuer: any email signs in as that test user.</p>
<form method="post" action="${escapeHtml(action)}"><label for="email">Email</label><input id="email" name="email" type="email" autocomplete="email" required autofocus>
<button type="submit">Sign in</button></form></main></body></html>`
}

/** The stable subject of a test user: the same email is the same user of an issuer. */
export const testSubject = (provider: OidcProviderName, email: string) =>
  createHash('sha256').update(`${provider}:${email.trim().toLowerCase()}`).digest('hex').slice(0, 32)

/**
 * oidc-provider's storage, in memory: the devnet's provider forgets everything when it stops, on
 * purpose (a test user signs in again). Without it the library warns that its own is for quick starts.
 */
function memoryAdapter() {
  const items = new Map<string, { payload: Record<string, unknown>; expiresAt: number }>()
  const grants = new Map<string, Set<string>>()
  const uids = new Map<string, string>()
  const codes = new Map<string, string>()
  return class MemoryAdapter {
    constructor(readonly model: string) {}
    key = (id: string) => `${this.model}:${id}`
    async upsert(id: string, payload: Record<string, unknown>, expiresIn: number) {
      items.set(this.key(id), { payload, expiresAt: Date.now() + expiresIn * 1000 })
      if (typeof payload['grantId'] === 'string') {
        const set = grants.get(payload['grantId']) ?? new Set<string>()
        set.add(this.key(id))
        grants.set(payload['grantId'], set)
      }
      if (typeof payload['uid'] === 'string') uids.set(payload['uid'], this.key(id))
      if (typeof payload['userCode'] === 'string') codes.set(payload['userCode'], this.key(id))
    }
    async find(id: string) {
      const item = items.get(this.key(id))
      if (!item || item.expiresAt <= Date.now()) return undefined
      return item.payload
    }
    async findByUid(uid: string) {
      const key = uids.get(uid)
      return key ? items.get(key)?.payload : undefined
    }
    async findByUserCode(userCode: string) {
      const key = codes.get(userCode)
      return key ? items.get(key)?.payload : undefined
    }
    async consume(id: string) {
      const item = items.get(this.key(id))
      if (item) item.payload['consumed'] = Math.floor(Date.now() / 1000)
    }
    async destroy(id: string) {
      items.delete(this.key(id))
    }
    async revokeByGrantId(grantId: string) {
      for (const key of grants.get(grantId) ?? []) items.delete(key)
      grants.delete(grantId)
    }
  }
}

function issuerConfiguration(name: OidcProviderName, parameters: OidcInstanceParameters, emails: Map<string, string>) {
  // Made as PKCS#8 and read back, not exported from generateKeyPairSync's key object: Node 20 can
  // deadlock exporting that one as a JWK (packages/kms/src/keys.ts says how).
  const pkcs8 = generateKeyPairSync('rsa', {
    modulusLength: 2048,
    privateKeyEncoding: { type: 'pkcs8', format: 'der' },
    publicKeyEncoding: { type: 'spki', format: 'der' },
  }).privateKey
  const jwk = {
    ...createPrivateKey({ key: pkcs8, format: 'der', type: 'pkcs8' }).export({ format: 'jwk' }),
    kid: `${name}-${randomBytes(4).toString('hex')}`,
    use: 'sig',
    alg: 'RS256',
  }
  return {
    adapter: memoryAdapter(),
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
    ttl: { AccessToken: 600, AuthorizationCode: 60, IdToken: 3600, Interaction: 600, Grant: 600, Session: 3600 },
    interactions: { url: (_ctx: unknown, interaction: { uid: string }) => `/${name}/interaction/${interaction.uid}` },
    async findAccount(_ctx: unknown, id: string) {
      const email = emails.get(id)
      if (!email) return undefined
      const verified = parameters.emailVerified ? parameters.emailVerified(email) : true
      return { accountId: id, claims: async () => ({ sub: id, email, ...(verified === undefined ? {} : { email_verified: verified }) }) }
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
export function oidcInstance(parameters: OidcInstanceParameters): Instance & {
  issuers: Record<OidcProviderName, OidcIssuer>
  idToken: (request: IdTokenRequest) => Promise<string>
} {
  const host = '127.0.0.1'
  const base = `http://localhost:${parameters.port}`
  let server: Server | undefined
  const issuers = Object.fromEntries(
    OIDC_PROVIDERS.map((name) => [
      name,
      { issuer: oidcIssuerUrl(parameters.port, name), clientId: parameters.clientId, authorizationEndpoint: `${base}/${name}/auth` } satisfies OidcIssuer,
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
      const title: Record<OidcProviderName, string> = {
        google: 'Sign in with Google (local)',
        apple: 'Sign in with Apple (local)',
        github: 'Sign in with GitHub (local)',
        discord: 'Sign in with Discord (local)',
      }

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
        // Like Apple, the local "Apple" answers only by form_post when the email is asked for.
        if (
          name === 'apple' &&
          rest[0] === 'auth' &&
          url.searchParams.get('response_mode') !== 'form_post' &&
          /\bemail\b/.test(url.searchParams.get('scope') ?? '')
        ) {
          response
            .writeHead(400, { 'content-type': 'text/plain' })
            .end('invalid_request: response_mode must be form_post when name or email scope is requested')
          return
        }
        // The issuer's own routes, under its path: oidc-provider reads the mount path from originalUrl, as under express.
        Object.assign(request, { originalUrl: request.url })
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
  return Object.assign(instance, { issuers, idToken: (request: IdTokenRequest) => idTokenFrom(issuers[request.provider], request) })
}

/** A test user's sign-in at the local provider, without a browser. */
export type IdTokenRequest = {
  provider: OidcProviderName
  /** The test user: the same email is the same `sub`. */
  email: string
  /** The ID token's nonce (the SHA-256 of a session key, for Turnkey's oauth_login). */
  nonce: string
  /** One of the instance's `redirectUris`. */
  redirectUri: string
}

const base64url = (bytes: Uint8Array) => Buffer.from(bytes).toString('base64url')

/**
 * Signs `email` in at `issuer` as a browser would, over HTTP (authorization request with PKCE,
 * the sign-in page's "Email" and "Sign in", the redirect), then exchanges the code for the ID
 * token at the token endpoint: a real token of the provider, for tests and benchmarks.
 */
async function idTokenFrom(issuer: OidcIssuer, request: IdTokenRequest): Promise<string> {
  const verifier = base64url(randomBytes(32))
  const start = new URL(issuer.authorizationEndpoint)
  start.search = new URLSearchParams({
    client_id: issuer.clientId,
    redirect_uri: request.redirectUri,
    response_type: 'code',
    scope: 'openid email',
    state: base64url(randomBytes(12)),
    nonce: request.nonce,
    code_challenge: base64url(createHash('sha256').update(verifier).digest()),
    code_challenge_method: 'S256',
    ...(request.provider === 'apple' ? { response_mode: 'form_post' } : {}),
  }).toString()
  const cookies = new Map<string, string>()
  let next = start
  let form: URLSearchParams | undefined
  let code: string | null = null
  for (let hop = 0; hop < 10 && code === null; hop++) {
    const response = await fetch(next, {
      method: form ? 'POST' : 'GET',
      redirect: 'manual',
      headers: {
        cookie: [...cookies].map(([name, value]) => `${name}=${value}`).join('; '),
        ...(form ? { 'content-type': 'application/x-www-form-urlencoded' } : {}),
      },
      ...(form ? { body: form.toString() } : {}),
    })
    form = undefined
    for (const line of response.headers.getSetCookie()) {
      const [pair = ''] = line.split(';')
      const split = pair.indexOf('=')
      cookies.set(pair.slice(0, split), pair.slice(split + 1))
    }
    const location = response.headers.get('location')
    if (location?.startsWith(request.redirectUri)) code = new URL(location).searchParams.get('code')
    else if (location) next = new URL(location, next)
    else {
      const page = await response.text()
      // Apple answers with a form posted to the redirect uri (response_mode=form_post).
      const posted = /<form[^>]*action="([^"]+)"/.exec(page)?.[1]?.replace(/&#(\d+);/g, (_, n: string) => String.fromCharCode(Number(n)))
      if (posted?.startsWith(request.redirectUri)) code = /name="code" value="([^"]+)"/.exec(page)?.[1] ?? null
      else if (posted && page.includes('name="email"')) {
        next = new URL(posted, next)
        form = new URLSearchParams({ email: request.email })
      } else throw new Error(`the local ${request.provider} issuer answered ${response.status} with no way on: ${page.slice(0, 200)}`)
    }
  }
  if (!code) throw new Error(`the local ${request.provider} issuer never sent the browser back to ${request.redirectUri}`)
  const response = await fetch(new URL(`${issuer.issuer}/token`), {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({
      grant_type: 'authorization_code',
      code,
      code_verifier: verifier,
      redirect_uri: request.redirectUri,
      client_id: issuer.clientId,
    }),
  })
  const answer = (await response.json()) as { id_token?: string; error?: string }
  if (!answer.id_token) throw new Error(`the local ${request.provider} issuer refused the code: ${answer.error ?? response.status}`)
  return answer.id_token
}
