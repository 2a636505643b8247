import type { Review, ReviewContext, ReviewKind, WalletRequest } from './types.js'

// A stand-in until the review lane's decoders land (they replace this file): `personal_sign`
// only, shown as UTF-8 text, or as hex with a warning when it is not text. Every other request
// gets a refusal, so nothing the frame cannot show can be approved.

const KINDS: Record<WalletRequest['method'], ReviewKind> = {
  personal_sign: 'message',
  eth_signTypedData_v4: 'typedData',
  eth_sendTransaction: 'transaction',
  wallet_sendCalls: 'batch',
  wallet_grantPermissions: 'grant',
  eip7702_authorization: 'authorization',
  export_wallet: 'export',
  add_credential: 'credential',
}

/**
 * What the consent frame shows for `request`.
 *
 * @example
 * reviewRequest({ method: 'personal_sign', params: ['0x68656c6c6f', account] }, { origin, account, chainId: 1 }).rows
 * // [{ label: 'Message', value: 'hello' }, { label: 'Account', value: account }]
 */
export function reviewRequest(request: WalletRequest, context: ReviewContext): Review {
  if (request.method === 'personal_sign') return reviewMessage(request.params, context)
  return {
    kind: KINDS[request.method],
    title: 'Request cannot be reviewed',
    origin: context.origin,
    rows: [{ label: 'Method', value: request.method }],
    warnings: [],
    refusal: 'This request cannot be reviewed yet',
  }
}

function reviewMessage(params: readonly unknown[], context: ReviewContext): Review {
  const [data, address] = params
  const base = { kind: 'message', title: 'Sign a message', origin: context.origin } as const
  if (typeof data !== 'string') return { ...base, rows: [], warnings: [], refusal: 'The message is not a string' }
  if (typeof address !== 'string' || address.toLowerCase() !== context.account.toLowerCase())
    return { ...base, rows: [], warnings: [], refusal: `The message is for ${String(address).slice(0, 42)}, not for this wallet's account ${context.account}` }
  const account = { label: 'Account', value: context.account }
  if (!/^0x(?:[0-9a-fA-F]{2})*$/.test(data)) return { ...base, rows: [{ label: 'Message', value: data }, account], warnings: [] }
  const text = readableText(data)
  if (text !== undefined) return { ...base, rows: [{ label: 'Message', value: text }, account], raw: data, warnings: [] }
  return {
    ...base,
    rows: [{ label: 'Message (hex)', value: data }, account],
    raw: data,
    warnings: [{ level: 'warning', text: 'This message is not readable text. Sign it only if you trust this app and know what it is for.' }],
  }
}

/** The hex as UTF-8 text, when it is valid UTF-8 without control characters other than line breaks and tabs. */
function readableText(hex: string): string | undefined {
  const bytes = new Uint8Array((hex.length - 2) / 2)
  for (let index = 0; index < bytes.length; index++) bytes[index] = Number.parseInt(hex.slice(2 + index * 2, 4 + index * 2), 16)
  try {
    const text = new TextDecoder('utf-8', { fatal: true }).decode(bytes)
    // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what this looks for
    return /[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f]/.test(text) ? undefined : text
  } catch {
    return undefined
  }
}
