// The operator console's page (GET /admin): one HTML document, its script and its stylesheet, all
// served by the backend under a strict Content-Security-Policy (no inline script, no eval, no
// other origin). The script builds every element with the DOM (text, never markup), so a user's
// email or an activity's type can never become code. It keeps the admin token in sessionStorage
// (gone with the tab) and sends it as the bearer token.

/** The headers of the page and its files: nothing inline, nothing from elsewhere, never framed. */
export const CONSOLE_HEADERS = {
  'content-security-policy':
    "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'; require-trusted-types-for 'script'",
  'x-content-type-options': 'nosniff',
  'x-frame-options': 'DENY',
  'cross-origin-opener-policy': 'same-origin',
  'cross-origin-resource-policy': 'same-origin',
  'referrer-policy': 'no-referrer',
  'cache-control': 'no-store',
} as const

export const CONSOLE_HTML = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Latchkey operator console</title>
<link rel="stylesheet" href="/admin/console.css">
<link rel="icon" type="image/svg+xml" href="/admin/console.svg">
<script type="module" src="/admin/console.js"></script>
</head>
<body>
<header>
<h1>Latchkey operator console</h1>
<button type="button" id="sign-out" hidden>Sign out</button>
</header>
<main>
<form id="sign-in" aria-labelledby="sign-in-title">
<h2 id="sign-in-title">Sign in</h2>
<label for="token">Admin token</label>
<input id="token" name="token" type="password" autocomplete="off" required>
<button type="submit">Sign in</button>
<p id="sign-in-error" role="alert"></p>
</form>
<div id="console" hidden>
<p id="status" role="status"></p>
<section aria-labelledby="users-title">
<h2 id="users-title">Users</h2>
<form id="user-search" role="search" aria-label="Users">
<label for="user-query">Email or address</label>
<input id="user-query" type="search" maxlength="320">
<button type="submit">Search</button>
</form>
<table id="users" aria-label="Users"></table>
<button type="button" id="users-more" hidden>More users</button>
<section id="user" aria-labelledby="user-title" hidden>
<h3 id="user-title">User</h3>
<dl id="user-facts"></dl>
<h4>Logins</h4>
<ul id="user-logins" aria-label="Logins"></ul>
<h4>Wallets</h4>
<ul id="user-wallets" aria-label="Wallets"></ul>
<h4>Activities</h4>
<table id="activities" aria-label="Activities"></table>
<button type="button" id="activities-more" hidden>More activities</button>
</section>
</section>
<section aria-labelledby="approvals-title">
<h2 id="approvals-title">Pending approvals</h2>
<table id="approvals" aria-label="Pending approvals"></table>
<button type="button" id="approvals-more" hidden>More approvals</button>
</section>
<section aria-labelledby="policies-title">
<h2 id="policies-title">Policies</h2>
<table id="policies" aria-label="Policies"></table>
<button type="button" id="policies-more" hidden>More policies</button>
</section>
<section aria-labelledby="deliveries-title">
<h2 id="deliveries-title">Webhook deliveries</h2>
<label for="delivery-status">Delivery status</label>
<select id="delivery-status">
<option value="">Any</option>
<option value="delivered">Delivered</option>
<option value="pending">Pending</option>
<option value="given_up">Given up</option>
</select>
<table id="deliveries" aria-label="Webhook deliveries"></table>
<button type="button" id="deliveries-more" hidden>More deliveries</button>
</section>
<section aria-labelledby="budgets-title">
<h2 id="budgets-title">Sponsorship budgets</h2>
<table id="budgets" aria-label="Sponsorship budgets"></table>
<button type="button" id="budgets-more" hidden>More budgets</button>
</section>
</div>
</main>
</body>
</html>
`

/** The tab's icon (so that the browser does not ask for /favicon.ico): a key's ring. */
export const CONSOLE_ICON =
  '<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 16 16"><circle cx="8" cy="8" r="5" fill="none" stroke="#2c6e49" stroke-width="3"/></svg>'

export const CONSOLE_CSS = `:root { font-family: system-ui, sans-serif; color-scheme: light dark; }
body { margin: 0 auto; max-width: 72rem; padding: 1rem; }
header { display: flex; justify-content: space-between; align-items: center; }
section { margin-block: 1.5rem; }
table { border-collapse: collapse; width: 100%; margin-block: 0.5rem; font-size: 0.9rem; }
th, td { border-bottom: 1px solid #8884; padding: 0.3rem 0.5rem; text-align: left; vertical-align: top; }
td.mono, li.mono { font-family: ui-monospace, monospace; word-break: break-all; }
[role="alert"] { color: #c0392b; }
[role="status"] { min-height: 1.2em; }
label { margin-inline-end: 0.5rem; }
button { margin-inline: 0.2rem; }
`

/** The page's script: plain ES2020, no template literals (it lives in one), no dependency. */
export const CONSOLE_JS = `const KEY = 'latchkey-admin-token'
const $ = (id) => document.getElementById(id)
const pages = {}

function element(tag, text, attributes) {
  const node = document.createElement(tag)
  if (text !== undefined && text !== null) node.textContent = String(text)
  for (const [name, value] of Object.entries(attributes || {})) node.setAttribute(name, value)
  return node
}
const time = (ms) => (ms === null || ms === undefined ? '' : new Date(ms).toISOString().replace('.000Z', 'Z'))
const say = (text) => { $('status').textContent = text }

class Unauthorized extends Error {}

async function api(method, path) {
  const token = sessionStorage.getItem(KEY)
  const response = await fetch(path, { method, headers: { authorization: 'Bearer ' + token } })
  const body = await response.json().catch(() => ({}))
  const message = body && body.error ? body.error.message : 'HTTP ' + response.status
  if (response.status === 401) {
    signOut(message)
    throw new Unauthorized(message)
  }
  if (!response.ok) throw new Error(message)
  return body
}

function signOut(message) {
  sessionStorage.removeItem(KEY)
  $('console').hidden = true
  $('sign-out').hidden = true
  $('sign-in').hidden = false
  $('sign-in-error').textContent = message || ''
}

/** A table of rows: columns are [header, cell(row) giving text or a node, class]. */
function table(id, columns, rows, append) {
  const target = $(id)
  if (!append) {
    target.replaceChildren()
    const head = element('tr')
    for (const [header] of columns) head.append(element('th', header, { scope: 'col' }))
    target.append(element('thead'), element('tbody'))
    target.tHead.append(head)
  }
  for (const row of rows) {
    const line = element('tr')
    for (const [, cell, kind] of columns) {
      const value = cell(row)
      const td = element('td', value instanceof Node ? undefined : value, kind ? { class: kind } : {})
      if (value instanceof Node) td.append(value)
      line.append(td)
    }
    target.tBodies[0].append(line)
  }
  if (!rows.length && !append) {
    const line = element('tr')
    line.append(element('td', 'None', { colspan: String(columns.length) }))
    target.tBodies[0].append(line)
  }
}

/**
 * A paged list: load(after) answers {items, next}; render(items, append) draws them; the "more"
 * button loads the next page.
 */
function paged(name, load, render) {
  const more = $(name + '-more')
  const state = { next: null }
  const run = async (append) => {
    try {
      const { items, next } = await load(append ? state.next : null)
      state.next = next
      render(items, append)
      more.hidden = next === null
    } catch (error) {
      if (!(error instanceof Unauthorized)) say(error.message)
    }
  }
  more.addEventListener('click', () => run(true))
  pages[name] = () => run(false)
  return pages[name]
}

const button = (text, label, onClick) => {
  const node = element('button', text, { type: 'button', 'aria-label': label })
  node.addEventListener('click', onClick)
  return node
}
const query = (parameters) => {
  const search = new URLSearchParams()
  for (const [name, value] of Object.entries(parameters)) if (value !== null && value !== undefined && value !== '') search.set(name, value)
  const text = search.toString()
  return text ? '?' + text : ''
}

paged(
  'users',
  async (after) => {
    const body = await api('GET', '/admin/users' + query({ query: $('user-query').value.trim(), after }))
    return { items: body.users, next: body.next }
  },
  (users, append) =>
    table(
      'users',
      [
        ['Email', (user) => user.email || (user.unverifiedEmail ? user.unverifiedEmail + ' (unverified)' : '')],
        ['Address', (user) => user.address, 'mono'],
        ['Created', (user) => time(user.createdAt)],
        ['', (user) => button('Open', 'Open ' + (user.email || user.unverifiedEmail || user.address), () => openUser(user.organizationId))],
      ],
      users,
      append,
    ),
)

let openOrganization = null
async function openUser(organizationId) {
  try {
    const user = await api('GET', '/admin/users/' + encodeURIComponent(organizationId))
    openOrganization = organizationId
    $('user').hidden = false
    $('user-title').textContent = 'User ' + (user.email || user.unverifiedEmail || user.address)
    const facts = $('user-facts')
    facts.replaceChildren()
    for (const [term, value] of [
      ['Sub-organization', user.organizationId],
      ['User', user.userId],
      ['Email', user.email || 'none proven'],
      ['Address', user.address],
      ['MFA', user.mfa.status],
      ['Created', time(user.createdAt)],
    ])
      facts.append(element('dt', term), element('dd', value))
    const logins = $('user-logins')
    logins.replaceChildren()
    for (const login of user.logins)
      logins.append(
        element(
          'li',
          (login.kind === 'email'
            ? 'Email'
            : login.kind === 'passkey'
              ? 'Passkey'
              : login.kind === 'wallet'
                ? 'Wallet'
                : 'OAuth (' + login.kind.slice('oauth:'.length) + ')') +
            ': ' +
            login.label,
        ),
      )
    if (!user.logins.length) logins.append(element('li', 'None'))
    const wallets = $('user-wallets')
    wallets.replaceChildren()
    for (const wallet of user.wallets)
      for (const account of wallet.accounts) wallets.append(element('li', wallet.walletName + ': ' + account.address + ' (' + account.path + ')', { class: 'mono' }))
    if (!user.wallets.length) wallets.append(element('li', 'None'))
    await pages.activities()
  } catch (error) {
    if (!(error instanceof Unauthorized)) say(error.message)
  }
}

const activityColumns = [
  ['Activity', (activity) => activity.type],
  ['Status', (activity) => activity.status],
  ['Created', (activity) => time(activity.createdAt)],
  ['Id', (activity) => activity.id, 'mono'],
]
paged(
  'activities',
  async (after) => {
    const body = await api('GET', '/admin/activities' + query({ org: openOrganization, after }))
    return { items: body.activities, next: body.next }
  },
  (activities, append) => table('activities', activityColumns, activities, append),
)

async function vote(activity, choice) {
  try {
    const body = await api('POST', '/admin/approvals/' + encodeURIComponent(activity.id) + '/' + choice)
    say((choice === 'approve' ? 'Approved ' : 'Rejected ') + activity.type + ': ' + body.activity.status)
  } catch (error) {
    if (!(error instanceof Unauthorized)) say(error.message)
  }
  await pages.approvals()
}
paged(
  'approvals',
  async (after) => {
    const body = await api('GET', '/admin/approvals' + query({ after }))
    return { items: body.approvals, next: body.next }
  },
  (approvals, append) =>
    table(
      'approvals',
      [
        ...activityColumns,
        ['Votes', (activity) => activity.votes.map((entry) => (entry.userName || entry.userId) + ' ' + String(entry.selection).replace('VOTE_SELECTION_', '').toLowerCase()).join(', ')],
        [
          '',
          (activity) => {
            const actions = element('span')
            if (activity.canApprove) actions.append(button('Approve', 'Approve ' + activity.type + ' ' + activity.id, () => vote(activity, 'approve')))
            if (activity.canReject) actions.append(button('Reject', 'Reject ' + activity.type + ' ' + activity.id, () => vote(activity, 'reject')))
            return actions
          },
        ],
      ],
      approvals,
      append,
    ),
)

paged(
  'policies',
  async (after) => {
    const body = await api('GET', '/admin/policies' + query({ after }))
    return { items: body.policies, next: body.next }
  },
  (policies, append) =>
    table(
      'policies',
      [
        ['Policy', (policy) => policy.policyName],
        ['Effect', (policy) => policy.effect],
        ['Condition', (policy) => policy.condition || '', 'mono'],
        ['Consensus', (policy) => policy.consensus || '', 'mono'],
      ],
      policies,
      append,
    ),
)

async function replay(delivery) {
  try {
    await api('POST', '/admin/webhooks/deliveries/' + encodeURIComponent(delivery.id) + '/replay')
    say('Replaying ' + delivery.type + ' to ' + delivery.url)
  } catch (error) {
    if (!(error instanceof Unauthorized)) say(error.message)
  }
  await pages.deliveries()
}
paged(
  'deliveries',
  async (after) => {
    const body = await api('GET', '/admin/webhooks/deliveries' + query({ status: $('delivery-status').value, after }))
    return { items: body.deliveries, next: body.next }
  },
  (deliveries, append) =>
    table(
      'deliveries',
      [
        ['Event', (delivery) => delivery.type],
        ['Endpoint', (delivery) => delivery.url, 'mono'],
        ['Status', (delivery) => delivery.status.replace('_', ' ')],
        ['Attempts', (delivery) => delivery.attempts],
        ['Last answer', (delivery) => (delivery.lastStatus === null ? delivery.lastError || '' : 'HTTP ' + delivery.lastStatus)],
        ['Created', (delivery) => time(delivery.createdAt)],
        ['', (delivery) => (delivery.status === 'pending' ? '' : button('Replay', 'Replay ' + delivery.type + ' to ' + delivery.url, () => replay(delivery)))],
      ],
      deliveries,
      append,
    ),
)
$('delivery-status').addEventListener('change', () => pages.deliveries())

paged(
  'budgets',
  async (after) => {
    const body = await api('GET', '/admin/sponsorship/budgets' + query({ after }))
    return { items: body.budgets, next: body.next }
  },
  (budgets, append) =>
    table(
      'budgets',
      [
        ['Day', (budget) => budget.day],
        ['Chain', (budget) => budget.chainId],
        ['Spent (wei)', (budget) => budget.spent, 'mono'],
        ['Reserved (wei)', (budget) => budget.reserved, 'mono'],
        ['Operations', (budget) => budget.operations.settled + ' settled, ' + budget.operations.reserved + ' reserved, ' + budget.operations.released + ' released'],
      ],
      budgets,
      append,
    ),
)

async function enter() {
  try {
    // The first call checks the token: a wrong one signs out with the API's 401 text.
    await api('GET', '/admin/users?limit=1')
  } catch (error) {
    if (!(error instanceof Unauthorized)) $('sign-in-error').textContent = error.message
    return
  }
  $('sign-in').hidden = true
  $('sign-in-error').textContent = ''
  $('console').hidden = false
  $('sign-out').hidden = false
  $('user').hidden = true
  for (const name of ['users', 'approvals', 'policies', 'deliveries', 'budgets']) await pages[name]()
}

$('sign-in').addEventListener('submit', (event) => {
  event.preventDefault()
  sessionStorage.setItem(KEY, $('token').value)
  $('token').value = ''
  enter()
})
$('user-search').addEventListener('submit', (event) => {
  event.preventDefault()
  $('user').hidden = true
  pages.users()
})
$('sign-out').addEventListener('click', () => signOut(''))
if (sessionStorage.getItem(KEY)) enter()
`
