import { utf8ToBytes } from '@noble/hashes/utils.js'
import { fromBase64, toBase64 } from './encoding.js'
import { InvalidAuthenticateParametersError } from './errors.js'
import type { AuthPayload, Cacao } from './sign/authTypes.js'

/*
 * CAIP-122 sign-in messages and CAIP-74 CACAOs, as WalletConnect's one-click sign-in carries
 * them, and ReCaps (EIP-5573) that list the methods a session grants. The message text is
 * EIP-4361 (SIWE), so a backend verifies a CACAO as it verifies any SIWE message: format the
 * payload with `formatAuthMessage`, then check the signature against `iss`.
 */

const DID_PKH = 'did:pkh:'
const RECAP = 'urn:recap:'
const RECAP_STATEMENT = 'I further authorize the stated URI to perform the following actions on my behalf: '

export type Recap = { att: Record<string, Record<string, Record<string, unknown>[]>> }

/**
 * The parts of a `did:pkh` issuer.
 *
 * @example
 * parseDidPkh('did:pkh:eip155:1:0xab…') // { chainId: 'eip155:1', address: '0xab…' }
 */
export function parseDidPkh(iss: string): { chainId: string; address: string } {
  const match = /^did:pkh:([-a-z0-9]{3,8}):([-_a-zA-Z0-9]{1,32}):([-.%a-zA-Z0-9]{1,128})$/.exec(iss)
  if (!match) throw new InvalidAuthenticateParametersError(`${JSON.stringify(iss)} is not a did:pkh issuer`)
  return { chainId: `${match[1]}:${match[2]}`, address: match[3]! }
}

/**
 * A ReCap granting `request/{method}` on `resource` (a namespace such as `eip155`), encoded as
 * the `urn:recap:` resource that goes last in a sign-in request's resources.
 *
 * @example
 * const recap = createRecap('eip155', ['personal_sign', 'eth_sendTransaction'])
 */
export function createRecap(resource: string, methods: readonly string[], limits: Record<string, unknown> = {}): string {
  const abilities = Object.fromEntries([...methods].sort((a, b) => a.localeCompare(b)).map((method) => [`request/${method}`, [limits]]))
  return encodeRecap({ att: { [resource]: abilities } })
}

/** @example const recap = encodeRecap({ att: { eip155: { 'request/personal_sign': [{}] } } }) */
export function encodeRecap(recap: Recap): string {
  assertRecap(recap)
  // ReCaps drop the base64 padding.
  return `${RECAP}${toBase64(utf8ToBytes(JSON.stringify(recap))).replace(/=+$/, '')}`
}

/** @example const { att } = decodeRecap(resources.at(-1)) */
export function decodeRecap(resource: string): Recap {
  if (!resource.startsWith(RECAP)) throw new InvalidAuthenticateParametersError('not a urn:recap: resource')
  const body = resource.slice(RECAP.length)
  let recap: unknown
  try {
    recap = JSON.parse(new TextDecoder().decode(fromBase64(body + '='.repeat((4 - (body.length % 4)) % 4))))
  } catch (error) {
    throw new InvalidAuthenticateParametersError(`the ReCap is not base64 JSON: ${String(error)}`)
  }
  assertRecap(recap)
  return recap
}

/** The ReCap among `resources`: by the spec, only ever the last one. */
export function recapOf(resources: readonly string[] | undefined): string | undefined {
  const last = resources?.[resources.length - 1]
  return last?.startsWith(RECAP) ? last : undefined
}

/** Methods a ReCap grants on `eip155`, as `request/{method}` abilities. */
export function methodsOfRecap(resource: string, namespace = 'eip155'): string[] {
  return Object.keys(decodeRecap(resource).att[namespace] ?? {})
    .filter((ability) => ability.startsWith('request/'))
    .map((ability) => ability.slice('request/'.length))
}

/** Chains a ReCap names in its limits (`[{ chains: [...] }]`). */
export function chainsOfRecap(resource: string): string[] {
  const chains = new Set<string>()
  for (const abilities of Object.values(decodeRecap(resource).att))
    for (const limits of Object.values(abilities)) {
      const named = limits[0]?.chains
      if (Array.isArray(named)) for (const chain of named) if (typeof chain === 'string') chains.add(chain)
    }
  return [...chains]
}

/** The human sentence a ReCap adds to the statement, so the signer reads what they grant. */
export function recapStatement(statement: string | undefined, resource: string): string {
  if (statement?.includes(RECAP_STATEMENT)) return statement
  let counter = 0
  const parts = Object.entries(decodeRecap(resource).att).map(([target, abilities]) => {
    const actions = Object.keys(abilities)
      .map((ability) => ({ ability: ability.split('/')[0] ?? '', action: ability.split('/')[1] ?? '' }))
      .sort((a, b) => a.action.localeCompare(b.action))
    const byAbility = new Map<string, string[]>()
    for (const { ability, action } of actions) byAbility.set(ability, [...(byAbility.get(ability) ?? []), action])
    const sentences = [...byAbility].map(([ability, names]) => `(${++counter}) '${ability}': '${names.join("', '")}' for '${target}'.`)
    // WalletConnect's wording, byte for byte: the first ".," only becomes ".".
    return sentences.join(', ').replace('.,', '.')
  })
  return `${statement ? `${statement} ` : ''}${RECAP_STATEMENT}${parts.join(' ')}`
}

/**
 * The EIP-4361 text a wallet signs for one chain of a sign-in request, and a backend rebuilds
 * from a CACAO's payload to verify it.
 *
 * @example
 * const message = formatAuthMessage({ payload: request.authPayload, iss: `did:pkh:eip155:1:${address}` })
 * const signature = await account.signMessage({ message })
 */
export function formatAuthMessage({ payload, iss }: { payload: Omit<AuthPayload, 'chains'> | Cacao['p']; iss: string }): string {
  const { chainId, address } = parseDidPkh(iss)
  const recap = recapOf(payload.resources)
  const statement = recap ? recapStatement(payload.statement || undefined, recap) : payload.statement || undefined
  const lines = [
    `${payload.domain} wants you to sign in with your Ethereum account:`,
    address,
    '',
    statement,
    '',
    `URI: ${payload.aud}`,
    `Version: ${payload.version}`,
    `Chain ID: ${chainId.split(':')[1]}`,
    `Nonce: ${payload.nonce}`,
    `Issued At: ${payload.iat}`,
    payload.exp ? `Expiration Time: ${payload.exp}` : undefined,
    payload.nbf ? `Not Before: ${payload.nbf}` : undefined,
    payload.requestId ? `Request ID: ${payload.requestId}` : undefined,
    payload.resources ? `Resources:${payload.resources.map((resource) => `\n- ${resource}`).join('')}` : undefined,
  ]
  return lines.filter((line) => line !== undefined).join('\n')
}

/**
 * Narrows a request to what a wallet supports: the chains both name, and a ReCap of only the
 * methods both name (with the chains as its limits). Throws when nothing is left.
 *
 * @example
 * const payload = populateAuthPayload({ authPayload: request.authPayload, chains: ['eip155:1'], methods: ['personal_sign'] })
 */
export function populateAuthPayload({
  authPayload,
  chains,
  methods,
}: {
  authPayload: AuthPayload
  chains: readonly string[]
  methods: readonly string[]
}): AuthPayload {
  const supported = authPayload.chains.filter((chain) => chains.includes(chain))
  if (!supported.length) throw new InvalidAuthenticateParametersError('the wallet supports none of the requested chains')
  const recap = recapOf(authPayload.resources)
  if (!recap) return { ...authPayload, chains: supported }
  const decoded = decodeRecap(recap)
  const asked = Object.keys(decoded.att.eip155 ?? {}).map((ability) => ability.split('/')[1] ?? '')
  const granted = asked.filter((method) => methods.includes(method))
  if (asked.length && !granted.length) throw new InvalidAuthenticateParametersError('the wallet supports none of the requested methods')
  const narrowed = createRecap('eip155', granted, { chains: supported })
  const others = Object.fromEntries(Object.entries(decoded.att).filter(([key]) => key !== 'eip155'))
  const merged = granted.length ? { att: { ...others, ...decodeRecap(narrowed).att } } : decoded
  const resource = encodeRecap({ att: Object.fromEntries(Object.entries(merged.att).sort(([a], [b]) => a.localeCompare(b))) })
  const resources = [...(authPayload.resources ?? []).slice(0, -1), resource]
  return { ...authPayload, chains: supported, statement: recapStatement(authPayload.statement ?? '', resource), resources }
}

/**
 * A signed CACAO for one chain of a request.
 *
 * @example
 * const cacao = createCacao({ payload, iss, signature: { t: 'eip191', s: signature } })
 */
export function createCacao({ payload, iss, signature }: { payload: AuthPayload; iss: string; signature: Cacao['s'] }): Cacao {
  const subject = iss.startsWith(DID_PKH) ? iss : `${DID_PKH}${iss}`
  return {
    h: { t: 'caip122' },
    p: {
      iss: subject,
      domain: payload.domain,
      aud: payload.aud,
      version: payload.version,
      nonce: payload.nonce,
      iat: payload.iat,
      ...(payload.statement === undefined ? {} : { statement: payload.statement }),
      ...(payload.requestId === undefined ? {} : { requestId: payload.requestId }),
      ...(payload.resources === undefined ? {} : { resources: payload.resources }),
      ...(payload.nbf === undefined ? {} : { nbf: payload.nbf }),
      ...(payload.exp === undefined ? {} : { exp: payload.exp }),
    },
    s: signature,
  }
}

function assertRecap(recap: unknown): asserts recap is Recap {
  const att = (recap as { att?: unknown } | null)?.att
  if (typeof att !== 'object' || att === null || Array.isArray(att) || !Object.keys(att).length)
    throw new InvalidAuthenticateParametersError('a ReCap needs a non-empty att object')
  for (const [target, abilities] of Object.entries(att)) {
    if (typeof abilities !== 'object' || abilities === null || Array.isArray(abilities) || !Object.keys(abilities).length)
      throw new InvalidAuthenticateParametersError(`ReCap resource ${target} must be a non-empty object`)
    for (const [ability, limits] of Object.entries(abilities))
      if (!Array.isArray(limits) || !limits.length || limits.some((limit) => typeof limit !== 'object' || limit === null))
        throw new InvalidAuthenticateParametersError(`ReCap ability ${ability} must be a non-empty array of objects`)
  }
}
