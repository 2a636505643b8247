// What the consent frame shows for one wallet request: the request decoded into rows, a tree
// for typed data, the simulated asset changes, and warnings. Decoding (review/*.ts) produces it
// from the raw request and the chain; the frame's page renders it and nothing else, so what the
// user approves is exactly what was decoded.

/** A request the app asks the frame to approve, as it arrives (still unchecked). */
export type WalletRequest =
  | { readonly method: 'personal_sign'; readonly params: readonly unknown[] }
  | { readonly method: 'eth_signTypedData_v4'; readonly params: readonly unknown[] }
  | { readonly method: 'eth_sendTransaction'; readonly params: readonly unknown[] }
  | { readonly method: 'wallet_sendCalls'; readonly params: readonly unknown[] }
  | { readonly method: 'wallet_grantPermissions'; readonly params: readonly unknown[] }
  | { readonly method: 'eip7702_authorization'; readonly params: readonly unknown[] }
  | { readonly method: 'export_wallet'; readonly params: readonly unknown[] }
  | { readonly method: 'add_credential'; readonly params: readonly unknown[] }
  | { readonly method: 'add_account'; readonly params: readonly unknown[] }
  | { readonly method: 'init_import'; readonly params: readonly unknown[] }
  | { readonly method: 'import_wallet'; readonly params: readonly unknown[] }

export type ReviewKind =
  | 'message'
  | 'typedData'
  | 'userOperation'
  | 'transaction'
  | 'batch'
  | 'grant'
  | 'authorization'
  | 'export'
  | 'credential'
  | 'account'
  | 'import'

/** One labelled line: "To", "Amount", "Network". */
export type ReviewRow = { readonly label: string; readonly value: string; readonly tone?: 'danger' | 'warning' }

/** A labelled tree (typed data's message, a decoded call's arguments). */
export type ReviewNode = { readonly label: string; readonly value?: string; readonly children?: readonly ReviewNode[] }

export type ReviewWarning = { readonly level: 'danger' | 'warning'; readonly text: string }

/** What eth_simulateV1 says the account gives and gets, as sentences: "You send 1.5 TKN". */
export type SimulationResult =
  | { readonly status: 'ok'; readonly sends: readonly string[]; readonly receives: readonly string[] }
  | { readonly status: 'reverted'; readonly reason: string }
  | { readonly status: 'unavailable'; readonly reason: string }

export type Review = {
  readonly kind: ReviewKind
  /** The dialog's heading: "Sign a message", "Send a transaction", "Grant a permission". */
  readonly title: string
  /** The origin that asks, shown to the user. */
  readonly origin: string
  readonly rows: readonly ReviewRow[]
  /** Typed data's domain and message, a batch's calls, a grant's limits. */
  readonly tree?: readonly ReviewNode[]
  /** The raw text or hex, for the user who wants to look (collapsed by default). */
  readonly raw?: string
  readonly warnings: readonly ReviewWarning[]
  /** Pending until the simulation answers; the frame shows the rest first. */
  readonly simulation?: Promise<SimulationResult>
  /** Set when the request must not be approved at all (a 7702 delegation to anything but the executor): the frame shows only "Reject". */
  readonly refusal?: string
}

/** What decoding may read: the chain's RPC (for symbols, decimals, simulation) and the wallet's settings. */
export type ReviewContext = {
  readonly origin: string
  readonly account: `0x${string}`
  readonly chainId: number
  /** JSON-RPC of the chain the request is for; undefined where the frame has none (no simulation then). */
  readonly rpc?: ((method: string, params: readonly unknown[]) => Promise<unknown>) | undefined
  /** The only contract an EIP-7702 authorization may delegate to. */
  readonly executor?: `0x${string}` | undefined
  /** The app's paymasters on this chain (kms settings): a UserOperation's fee names them. */
  readonly paymasters?: { readonly sponsor?: `0x${string}` | undefined; readonly token?: `0x${string}` | undefined } | undefined
  /** The app's name (kms settings), never the page's word: "Network fee: sponsored by APP". */
  readonly appName?: string | undefined
}
