import { getFreePort } from '@latchkey/devnet'
import { createRelay, type Relay } from '@latchkey/relay'
import { WebSocket } from 'ws'
import { createSignClient, type KeyValueStorage, memoryStorage, type SignClient, type SignClientEvents, type WebSocketConstructor } from '../src/index.js'

export const account = '0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266'
export const eip155 = {
  chains: ['eip155:31337', 'eip155:31338'],
  methods: ['personal_sign', 'eth_sendTransaction'],
  events: ['chainChanged', 'accountsChanged'],
}
export const grant = (chains = eip155.chains) => ({
  eip155: { chains, methods: eip155.methods, events: eip155.events, accounts: chains.map((chain) => `${chain}:${account}`) },
})

export async function startRelay(port?: number): Promise<Relay> {
  const relay = createRelay({ port: port ?? (await getFreePort()) })
  await relay.start()
  return relay
}

export type Peer = SignClient & { storage: KeyValueStorage }

/** A Sign client of ours on `relay`; reuse `storage` to model a reload. */
export type Warnings = string[] & { warn(message: string): void }

/** A logger that keeps what it is told, so a test can assert the warning of a dropped message. */
export function warnings(): Warnings {
  const list: string[] = []
  return Object.assign(list, { warn: (message: string) => void list.push(message) })
}

export async function peer(relay: Relay, name: string, extra: { storage?: KeyValueStorage; now?: () => number; logger?: Warnings } = {}): Promise<Peer> {
  const storage = extra.storage ?? memoryStorage()
  const client = await createSignClient({
    relayUrl: relay.url,
    metadata: { name, description: `${name} (test)`, url: `http://${name}.test`, icons: [] },
    storage,
    WebSocket: WebSocket as unknown as WebSocketConstructor,
    ...(extra.now ? { now: extra.now } : {}),
    ...(extra.logger ? { logger: extra.logger } : {}),
  })
  return Object.assign(client, { storage })
}

/** The next event of a kind, as a promise. */
export function next<name extends keyof SignClientEvents>(client: SignClient, name: name): Promise<SignClientEvents[name]> {
  return new Promise((resolve) => client.events.once(name, resolve))
}

/** A dapp and a wallet with a settled session. */
export async function paired(relay: Relay, dappName = 'dapp', walletName = 'wallet') {
  const dapp = await peer(relay, dappName)
  const wallet = await peer(relay, walletName)
  const session = await settle(dapp, wallet)
  return { dapp, wallet, session }
}

export async function settle(dapp: SignClient, wallet: SignClient, chains = eip155.chains) {
  const proposal = next(wallet, 'session_proposal')
  const { uri, approval } = await dapp.connect({ optionalNamespaces: { eip155 } })
  await wallet.pair({ uri })
  const { id } = await proposal
  const { acknowledged } = await wallet.approve({ id, namespaces: grant(chains) })
  const [session] = await Promise.all([approval(), acknowledged()])
  return session
}

/**
 * For answers sent from event listeners: the dapp awaits each answer, so a lost one fails the
 * test; only the relay's receipt may still be on its way when the test closes the clients.
 */
export const closing = (error: Error) => {
  if (!/closed/.test(error.message)) throw error
}
