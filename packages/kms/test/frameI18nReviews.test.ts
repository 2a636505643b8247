import { BATCH_CALLS_PARAMETERS, BATCH_EXECUTOR_ABI, BATCH_MODE } from '@latchkey/constants/batch-executor'
import {
  encodeAbiParameters,
  encodeFunctionData,
  getTypesForEIP712Domain,
  type Hex,
  keccak256,
  maxUint256,
  padHex,
  parseAbi,
  parseEther,
  parseUnits,
  serializeTypedData,
  stringToHex,
  toHex,
} from 'viem'
import { getUserOperationTypedData, type UserOperation } from 'viem/account-abstraction'
import { privateKeyToAccount } from 'viem/accounts'
import { createSiweMessage } from 'viem/siwe'
import { afterAll, describe, expect, test } from 'vitest'
import { checkCredential } from '../src/frames/browser/consentChecks/credential.js'
import { checkExport } from '../src/frames/browser/consentChecks/exportKey.js'
import { feeRow } from '../src/frames/browser/consentChecks/transaction.js'
import { GRANT_SIGNS_ROW } from '../src/frames/browser/consentPayload.js'
import { dialog } from '../src/frames/browser/i18n/dialog.js'
import { en } from '../src/frames/browser/i18n/en.js'
import { display, displayRow, displayValue, FRAME_LOCALES, type FrameLocale, t, useFrameLocale } from '../src/frames/browser/i18n/index.js'
import { values } from '../src/frames/browser/i18n/valueTexts.js'
import { reviewRequest } from '../src/frames/browser/review/index.js'
import type { Review, ReviewContext, ReviewNode, WalletRequest } from '../src/frames/browser/review/types.js'
import { PERMIT_TYPES } from './fixtures/permit.js'

// Every text the review builders (review/*.ts) and the payload checks (consentChecks/*.ts) write,
// for a set of requests against a scripted chain (tokens, an NFT collection, a simulation that
// moves ETH, an NFT and an ERC-1155 item), shown in each of the 15 other locales: none may stay in
// English but the request's own text (a message, typed data's values, a domain), addresses,
// numbers, token symbols and code (function signatures, argument and field names).

const key = (label: string) => privateKeyToAccount(keccak256(toHex(`latchkey i18n review ${label}`))).address
const account = key('account')
const recipient = key('recipient')
const spender = key('spender')
const session = key('session')
const TOKEN = key('token')
const PUNKS = key('punks')
const RAW = key('raw token')
const EXECUTOR = key('executor')
const SPONSOR = key('sponsor')
const STRANGER = key('stranger paymaster')
const NOW = Date.UTC(2029, 0, 1)

const word = (value: bigint | number) => padHex(toHex(value), { size: 32 })
const abiString = (text: string) => encodeAbiParameters([{ type: 'string' }], [text])
/** A chain that knows TKN (18 decimals) and PUNK (an ERC-721 collection), estimates gas, and simulates a send of ETH that brings back NFT #7 and 5 of item #3. */
function chainRpc(simulation: 'moves' | 'reverts' | 'fails' = 'moves', estimate = true) {
  return async (method: string, params: readonly unknown[]): Promise<unknown> => {
    const [first] = params as [Record<string, string>]
    switch (method) {
      case 'eth_call': {
        const selector = first.data!.slice(0, 10)
        const to = first.to!.toLowerCase()
        if (selector === '0x95d89b41' && to === TOKEN.toLowerCase()) return abiString('TKN')
        if (selector === '0x95d89b41' && to === PUNKS.toLowerCase()) return abiString('PUNK')
        if (selector === '0x313ce567' && to === TOKEN.toLowerCase()) return word(18)
        if (selector === '0x01ffc9a7' && to === PUNKS.toLowerCase()) return word(1)
        throw new Error('execution reverted')
      }
      case 'eth_estimateGas':
        if (!estimate) throw new Error('rpc-503')
        return toHex(49319)
      case 'eth_gasPrice':
        return toHex(1_383_508_776)
      case 'eth_maxPriorityFeePerGas':
        return '0x0'
      case 'eth_simulateV1': {
        if (simulation === 'fails') throw new Error('rpc-500')
        const calls = (first as unknown as { blockStateCalls: { calls: unknown[] }[] }).blockStateCalls[0]!.calls
        const me = padHex(account.toLowerCase() as Hex, { size: 32 })
        const other = padHex(recipient.toLowerCase() as Hex, { size: 32 })
        const transfer = '0xddf252ad1be2c89b69c2b068fc378daa952ba7f163c4a11628f55a4df523b3ef'
        const single = '0xc3d58168c5ae7397731d063d5bbf3d657854427343f4c083240f7aacaa2d0f62'
        const logs = [
          { address: '0xeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeee', topics: [transfer, me, other], data: word(parseEther('1.25')) },
          { address: PUNKS, topics: [transfer, other, me, word(7)], data: '0x' },
          { address: PUNKS, topics: [single, other, other, me], data: encodeAbiParameters([{ type: 'uint256' }, { type: 'uint256' }], [3n, 5n]) },
        ]
        return [
          {
            calls: calls.map((_, index) =>
              simulation === 'reverts' ? { status: '0x0', returnData: '0x' } : { status: '0x1', returnData: '0x', logs: index === 0 ? logs : [] },
            ),
          },
        ]
      }
      default:
        throw new Error(`unexpected ${method}`)
    }
  }
}
const context: ReviewContext = {
  origin: 'https://app.example.com',
  account,
  chainId: 31337,
  rpc: chainRpc(),
  executor: EXECUTOR,
  paymasters: { sponsor: SPONSOR },
}

const ABI = parseAbi([
  'function transfer(address to, uint256 amount)',
  'function approve(address spender, uint256 amount)',
  'function transferFrom(address from, address to, uint256 amount)',
  'function safeTransferFrom(address from, address to, uint256 tokenId)',
  'function safeTransferFrom(address from, address to, uint256 id, uint256 amount, bytes data)',
  'function safeBatchTransferFrom(address from, address to, uint256[] ids, uint256[] amounts, bytes data)',
  'function setApprovalForAll(address operator, bool approved)',
])
const call = (to: Hex, data: Hex, value = 0n) => ({ to, data, value: toHex(value) })
const send = (transaction: Record<string, unknown>): WalletRequest => ({ method: 'eth_sendTransaction', params: [transaction] })
const typed = (data: unknown): WalletRequest => ({ method: 'eth_signTypedData_v4', params: [account, JSON.stringify(data)] })

function userOperation(paymaster?: Hex): unknown {
  const calls = [
    { to: TOKEN as Hex, value: 0n, data: encodeFunctionData({ abi: ABI, functionName: 'transfer', args: [recipient, parseUnits('2.5', 18)] }) },
    { to: recipient as Hex, value: parseEther('0.01'), data: '0x' as Hex },
  ]
  const operation: UserOperation<'0.8'> = {
    sender: account,
    nonce: 0n,
    callData: encodeFunctionData({
      abi: BATCH_EXECUTOR_ABI,
      functionName: 'execute',
      args: [BATCH_MODE, encodeAbiParameters(BATCH_CALLS_PARAMETERS, [calls])],
    }),
    callGasLimit: 200_000n,
    verificationGasLimit: 100_000n,
    preVerificationGas: 50_000n,
    maxFeePerGas: 2_000_000_000n,
    maxPriorityFeePerGas: 1_000_000_000n,
    signature: '0x',
    ...(paymaster ? { paymaster, paymasterVerificationGasLimit: 60_000n, paymasterPostOpGasLimit: 0n, paymasterData: '0x' as Hex } : {}),
  }
  const data = getUserOperationTypedData({ chainId: 31337, entryPointAddress: '0x4337084D9E255Ff0702461CF8895CE9E3b5Ff108', userOperation: operation })
  return JSON.parse(
    serializeTypedData({ ...data, types: { EIP712Domain: getTypesForEIP712Domain({ domain: data.domain }), ...data.types } } as Parameters<
      typeof serializeTypedData
    >[0]),
  )
}

/** The requests, each with the context it is reviewed in. */
const REQUESTS: [string, WalletRequest, ReviewContext][] = [
  ['message', { method: 'personal_sign', params: [stringToHex('Pay 1 ETH to the bearer'), account] }, context],
  ['hex message', { method: 'personal_sign', params: ['0xff00fe80', account] }, context],
  [
    'sign-in for another site',
    {
      method: 'personal_sign',
      params: [
        stringToHex(
          createSiweMessage({
            domain: 'evil.example',
            address: recipient,
            statement: 'Sign in to the demo.',
            uri: 'https://evil.example/login',
            version: '1',
            chainId: 1,
            nonce: 'abcdef12345678',
            issuedAt: new Date('2028-11-28T01:00:00Z'),
          }),
        ),
        account,
      ],
    },
    context,
  ],
  [
    'typed data',
    typed({
      types: {
        EIP712Domain: [
          { name: 'name', type: 'string' },
          { name: 'chainId', type: 'uint256' },
        ],
        Mail: [
          { name: 'contents', type: 'string' },
          { name: 'to', type: 'address' },
        ],
      },
      primaryType: 'Mail',
      domain: { name: 'Mailer', chainId: 10 },
      message: { contents: 'Hello, you send nothing', to: recipient },
    }),
    context,
  ],
  [
    'unlimited permit',
    typed({
      types: PERMIT_TYPES,
      primaryType: 'Permit',
      domain: { name: 'Token', version: '1', chainId: 31337, verifyingContract: TOKEN },
      message: { owner: account, spender, value: maxUint256.toString(), nonce: 0, deadline: 1893456000 },
    }),
    context,
  ],
  ['ETH transfer with its fee fields', send({ to: recipient, value: toHex(parseEther('1234.5')), gas: '0x186a0', maxFeePerGas: '0x77359400' }), context],
  [
    'token transfer, fee estimated',
    send(call(TOKEN, encodeFunctionData({ abi: ABI, functionName: 'transfer', args: [recipient, parseUnits('1500.25', 18)] }))),
    context,
  ],
  ['fee that cannot be estimated', send(call(TOKEN, '0x12345678')), { ...context, rpc: chainRpc('reverts', false) }],
  ['unlimited approval', send(call(TOKEN, encodeFunctionData({ abi: ABI, functionName: 'approve', args: [spender, maxUint256] }))), context],
  ['NFT approval', send(call(PUNKS, encodeFunctionData({ abi: ABI, functionName: 'approve', args: [spender, 5n] }))), context],
  ['NFT transferFrom', send(call(PUNKS, encodeFunctionData({ abi: ABI, functionName: 'transferFrom', args: [account, recipient, 5n] }))), context],
  [
    'ERC-721 safeTransferFrom',
    send(call(PUNKS, encodeFunctionData({ abi: ABI, functionName: 'safeTransferFrom', args: [account, recipient, 12345678901234567890n] }))),
    context,
  ],
  [
    'ERC-1155 safeTransferFrom',
    send(call(PUNKS, encodeFunctionData({ abi: ABI, functionName: 'safeTransferFrom', args: [account, recipient, 3n, 1200n, '0x'] }))),
    context,
  ],
  [
    'ERC-1155 safeBatchTransferFrom',
    send(call(PUNKS, encodeFunctionData({ abi: ABI, functionName: 'safeBatchTransferFrom', args: [account, recipient, [1n, 2n], [5n, 3000n], '0x'] }))),
    context,
  ],
  ['setApprovalForAll', send(call(PUNKS, encodeFunctionData({ abi: ABI, functionName: 'setApprovalForAll', args: [spender, true] }))), context],
  ['revoking setApprovalForAll', send(call(PUNKS, encodeFunctionData({ abi: ABI, functionName: 'setApprovalForAll', args: [spender, false] }))), context],
  ['unknown call, no chain', send(call(TOKEN, '0xdeadbeef00')), { ...context, rpc: undefined }],
  ['raw token amount', send(call(RAW, encodeFunctionData({ abi: ABI, functionName: 'transfer', args: [recipient, 1000n] }))), context],
  ['unlimited raw token approval', send(call(RAW, encodeFunctionData({ abi: ABI, functionName: 'approve', args: [spender, maxUint256] }))), context],
  ['contract deployment, the chain cannot simulate', send({ data: '0x6080604052' }), { ...context, rpc: chainRpc('fails') }],
  [
    'batch',
    {
      method: 'wallet_sendCalls',
      params: [
        {
          version: '2.0.0',
          chainId: '0x1',
          from: account,
          calls: [call(TOKEN, encodeFunctionData({ abi: ABI, functionName: 'transfer', args: [recipient, parseUnits('1', 18)] })), { data: '0x6080' }],
        },
      ],
    },
    { ...context, rpc: chainRpc('reverts') },
  ],
  ['UserOperation paid by the account', typed(userOperation()), context],
  ['sponsored UserOperation', typed(userOperation(SPONSOR)), context],
  ['UserOperation with a stranger paymaster', typed(userOperation(STRANGER)), context],
  [
    'grant',
    {
      method: 'wallet_grantPermissions',
      params: [
        {
          chainId: '0x7a69',
          address: account,
          expiry: 1893456000,
          signer: { type: 'account', data: { address: session } },
          permissions: [
            { type: 'native-token-recurring-allowance', data: { allowance: toHex(parseEther('0.1')), start: 1767225600, period: 86400 } },
            { type: 'erc20-recurring-allowance', data: { token: TOKEN, allowance: toHex(parseUnits('10', 18)), period: 7200 } },
            { type: 'contract-call', data: { address: TOKEN, calls: ['transfer(address,uint256)'] } },
          ],
        },
      ],
    },
    context,
  ],
  [
    'grant of tokens only (it cannot pay network fees)',
    {
      method: 'wallet_grantPermissions',
      params: [
        {
          chainId: '0x7a69',
          address: account,
          expiry: 1893456000,
          permissions: [{ type: 'erc20-recurring-allowance', data: { token: TOKEN, allowance: toHex(parseUnits('10', 18)), period: 86400 } }],
        },
      ],
    },
    context,
  ],
  ['authorization on every chain', { method: 'eip7702_authorization', params: [{ address: EXECUTOR, chainId: 0, nonce: 0 }] }, context],
  ['authorization to a stranger on another chain', { method: 'eip7702_authorization', params: [{ address: STRANGER, chainId: 10 }] }, context],
  ['export', { method: 'export_wallet', params: [] }, context],
  ['credential', { method: 'add_credential', params: [] }, context],
  ['account', { method: 'add_account', params: [{ path: "m/44'/60'/0'/0/1" }] }, context],
  ['prepare import', { method: 'init_import', params: [{}] }, context],
  ['import', { method: 'import_wallet', params: [{ walletName: 'Savings' }] }, context],
]

const EXPORT_KEY = `04${'11'.repeat(64)}`
/** What the payload checks add (consentChecks/*.ts): the fee a signed transaction allows, a credential's lifetime, an export's target. */
const FACTS = [
  feeRow({ to: recipient, gas: 49319n, maxFeePerGas: 1_383_508_776n, chainId: 31337, type: 'eip1559' }),
  GRANT_SIGNS_ROW,
  ...(checkCredential(
    {
      type: 'ACTIVITY_TYPE_CREATE_API_KEYS_V2',
      parameters: {
        apiKeys: [
          { apiKeyName: 'laptop', publicKey: `02${'ab'.repeat(32)}`, expirationSeconds: '259200' },
          { apiKeyName: 'server', publicKey: `03${'cd'.repeat(32)}`, expirationSeconds: '45' },
          { apiKeyName: 'forever', publicKey: `02${'ef'.repeat(32)}` },
        ],
      },
    },
    NOW,
  ).rows ?? []),
  ...(checkCredential({ type: 'ACTIVITY_TYPE_CREATE_AUTHENTICATORS_V2', parameters: { authenticators: [{ authenticatorName: 'YubiKey' }] } }, NOW).rows ?? []),
  ...(checkCredential({ type: 'ACTIVITY_TYPE_UPDATE_USER_EMAIL', parameters: { userEmail: 'me@example.com' } }, NOW).rows ?? []),
  ...(checkExport({ type: 'ACTIVITY_TYPE_EXPORT_WALLET', parameters: { targetPublicKey: EXPORT_KEY } }, { account }, { exportKey: EXPORT_KEY }).rows ?? []),
].filter((row) => row !== undefined)
const FACT_WARNINGS =
  checkExport({ type: 'ACTIVITY_TYPE_EXPORT_WALLET', parameters: { targetPublicKey: EXPORT_KEY } }, { account }, { exportKey: EXPORT_KEY }).warnings ?? []

/** Rows whose value is the request's own (a message, a statement, a domain, an address, a nonce): shown as it is, in its own direction. */
const OWN_VALUES = new Set<string>([
  en.rowMessage,
  en.rowMessageHex,
  en.rowStatement,
  en.rowDomain,
  en.rowAddress,
  'URI',
  en.rowNonce,
  en.rowType,
  en.rowContract,
  en.rowDelegateTo,
  en.rowAccount,
  en.rowWallet,
  en.rowAllowedCall,
])
/** Code, not English: a function signature, an argument's or a field's name, an ERC-7715 permission type, an ABI bool. */
const CODE = /^(?:[a-z][\w-]*(?:\[\d+\])?|\w+\([\w,[\]]*\)(?: \(0x[0-9a-f]{8}\))?|true|false)$/

type Shown = { readonly english: string; readonly shown: string; readonly own?: true }

/** Every text the dialog shows for `review`, as consentDialog.ts shows it, beside its English. */
async function shownTexts(review: Review, facts: { rows?: readonly { label: string; value: string }[]; warnings?: readonly { text: string }[] } = {}) {
  const texts: Shown[] = []
  const add = (english: string, shown: string, own = false) => texts.push(own ? { english, shown, own } : { english, shown })
  add(review.title, display(review.title))
  for (const warning of [...review.warnings, ...(facts.warnings ?? [])]) add(warning.text, display(warning.text))
  for (const row of [...review.rows, ...(facts.rows ?? [])]) {
    add(row.label, display(row.label))
    add(row.value, displayRow(row.label, row.value), OWN_VALUES.has(row.label))
  }
  const decoded = review.kind !== 'typedData'
  const walk = (nodes: readonly ReviewNode[]) => {
    for (const node of nodes) {
      add(node.label, display(node.label), (!decoded && node.label !== en.rowDomain) || CODE.test(node.label))
      if (node.value !== undefined) add(node.value, displayValue(node.value, decoded), !decoded || CODE.test(node.value))
      walk(node.children ?? [])
    }
  }
  walk(review.tree ?? [])
  if (review.refusal) add(review.refusal, display(review.refusal))
  const simulation = await review.simulation
  if (simulation?.status === 'ok') for (const line of [...simulation.sends, ...simulation.receives]) add(line, display(line))
  else if (simulation)
    add(
      simulation.reason,
      t(simulation.status === 'reverted' ? 'simReverted' : 'simUnavailable', { reason: display(simulation.reason) }, true)
        .split(': ')
        .slice(1)
        .join(': '),
    )
  return texts
}

/** Addresses, selectors and keys (hex), emails and domains: the request's values. */
const VALUES = /0x[0-9a-fA-F]{4,}|\b[0-9a-f]{16,}\b|[\w.-]+@[\w.-]+|\b[\w-]+(?:\.[a-z]{2,})+\b/g
/** Symbols, units, names of chains and of the fixtures' keys and wallets, UTC: not words to translate. */
const ALLOWED = new Set(['ETH', 'TKN', 'PUNK', 'NFT', 'EIP', 'API', 'URI', 'UTC', 'gwei', 'Ethereum', 'Anvil', 'OP', 'Mainnet', 'symbol', 'decimals'])
const FIXTURE_NAMES = new Set(['laptop', 'server', 'forever', 'YubiKey', 'Savings', 'rpc'])
const words = (text: string) => (text.replace(VALUES, ' ').match(/[A-Za-z]{2,}/g) ?? []).filter((found) => !FIXTURE_NAMES.has(found))

describe('the review in every locale', async () => {
  const reviews = await Promise.all(REQUESTS.map(async ([name, request, reviewContext]) => [name, await reviewRequest(request, reviewContext)] as const))
  /** Every English word the review writes (its own texts, not the request's): what must not be left in another locale. */
  const english = new Set<string>()
  await useFrameLocale('en', () => NOW)
  for (const [, review] of reviews) for (const text of await shownTexts(review)) if (!text.own) for (const found of words(text.english)) english.add(found)
  for (const text of await shownTexts({ kind: 'credential', title: '', origin: '', rows: [], warnings: [] }, { rows: FACTS, warnings: FACT_WARNINGS }))
    for (const found of words(text.english)) english.add(found)
  afterAll(() => useFrameLocale('en'))

  test.each(FRAME_LOCALES.filter((locale) => locale !== 'en'))('behavior: in %s, no text the review writes is left in English', async (locale: FrameLocale) => {
    await useFrameLocale(locale, () => NOW)
    // The locale's own words (a loanword such as "Wallet" or "Token" in de is the locale's).
    const catalogue = Object.keys({ ...en, ...dialog, ...values }).map((name) => t(name as Parameters<typeof t>[0]))
    const own = new Set(catalogue.flatMap(words))
    const left: string[] = []
    const check = (where: string, text: Shown) => {
      if (text.own) return
      const english_ = words(text.shown).filter((found) => english.has(found) && !own.has(found) && !ALLOWED.has(found))
      if (english_.length) left.push(`${where}: ${JSON.stringify(text.shown)} (${english_.join(' ')})`)
    }
    for (const [name, review] of reviews) for (const text of await shownTexts(review)) check(name, text)
    for (const text of await shownTexts({ kind: 'credential', title: '', origin: '', rows: [], warnings: [] }, { rows: FACTS, warnings: FACT_WARNINGS }))
      check('payload checks', text)
    expect(left).toEqual([])
  })

  test('behavior: the fee, NFT sentences and the tree in de, ru and he, numbers through Intl to the last digit, values isolated in Hebrew', async () => {
    const byName = new Map(reviews)
    await useFrameLocale('de', () => NOW)
    expect(displayRow(en.rowFeeAtMost, FACTS[0]!.value)).toBe('0,000068233269323544 ETH (49.319 Gas zu 1,383508776 Gwei)')
    expect(
      byName
        .get('ERC-721 safeTransferFrom')!
        .rows.map((row) => displayRow(row.label, row.value))
        .at(-1),
    ).toBe(`NFT #12345678901234567890 von PUNK (${PUNKS}) von ${account} nach ${recipient} bewegen`)
    expect(displayRow(en.rowAction, byName.get('ERC-1155 safeBatchTransferFrom')!.rows.at(-1)!.value)).toBe(
      `5 von #1, 3.000 von #2 von ${PUNKS} von ${account} nach ${recipient} bewegen`,
    )
    await useFrameLocale('ru', () => NOW)
    expect(displayRow(en.rowAction, byName.get('NFT approval')!.rows.at(-1)!.value)).toBe(`Разрешить ${spender} перемещать NFT #5 из PUNK (${PUNKS})`)
    expect((await byName.get('ETH transfer with its fee fields')!.simulation)!).toEqual({
      status: 'ok',
      sends: ['You send 1.25 ETH'],
      receives: [`You receive NFT #7 of PUNK (${PUNKS})`, `You receive 5 of token #3 of PUNK (${PUNKS})`],
    })
    expect(display(`You receive 5 of token #3 of PUNK (${PUNKS})`)).toBe(`Вы получаете 5 токена #3 из PUNK (${PUNKS})`)
    expect(displayValue('1234.5 ETH', true)).toBe('1\u00A0234,5 ETH')
    expect(displayValue('7200 seconds', true)).toBe('7\u00A0200 секунд')
    await useFrameLocale('he', () => NOW)
    const isolated = (value: string) => `\u2068${value}\u2069`
    expect(display(byName.get('batch')!.tree![1]!.label)).toBe(`קריאה 2 אל ${isolated('חוזה חדש')}`)
    expect(displayRow(en.rowValue, '1 ETH')).toBe(isolated('1 ETH'))
    expect(displayRow(en.rowMessage, 'Pay 1 ETH')).toBe(isolated('Pay 1 ETH'))
    expect(display(`Send 1 ETH to ${recipient}`)).toBe(`שליחת ${isolated('1 ETH')} אל ${isolated(recipient)}`)
  })

  test('behavior: a grant’s native limit reads "network fees included", and a grant without one says it cannot pay them, in de and ar', async () => {
    const byName = new Map(reviews)
    const shown = (name: string) =>
      byName
        .get(name)!
        .rows.slice(3)
        .map((row) => [display(row.label), displayRow(row.label, row.value)])
    await useFrameLocale('de', () => NOW)
    expect(shown('grant')[0]).toEqual(['ETH-Limit', '0,1 ETH pro Tag, ab 01.01.2026, 00:00:00 UTC (vor 3 Jahren), Netzwerkgebühren inbegriffen'])
    expect(shown('grant of tokens only (it cannot pay network fees)')).toEqual([
      ['TKN-Limit', '10 TKN pro Tag'],
      ['Netzwerkgebühr', 'keine: ohne ETH-Limit kann diese Berechtigung keine Netzwerkgebühren zahlen'],
    ])
    await useFrameLocale('ar', () => NOW)
    expect(shown('grant of tokens only (it cannot pay network fees)')[1]).toEqual([
      'رسوم الشبكة',
      'لا شيء: من دون حدّ \u2068ETH\u2069 لا يمكن لهذا الإذن دفع رسوم الشبكة',
    ])
  })

  test('error: a value cannot reorder the sentence around it: its direction controls are shown as code points', async () => {
    await useFrameLocale('ar', () => NOW)
    expect(display('The simulation reverted: pay \u202E1 ETH')).toBe('تراجعت المحاكاة: \u2068pay <U+202E>1 ETH\u2069')
    await useFrameLocale('en', () => NOW)
    expect(display('No simulation: a\u2069b')).toBe('No simulation: a<U+2069>b')
  })
})
