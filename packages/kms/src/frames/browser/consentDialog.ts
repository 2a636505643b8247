import { display, displayRow, displayValue, t } from './i18n/index.js'
import type { Review, ReviewNode, SimulationResult } from './review/types.js'

// The consent dialog: renders a Review (text only, through textContent) and answers whether the
// user approved. Only a trusted click or key press on its own "Approve" counts: `isTrusted` is
// false for every event a script makes (`button.click()`, `dispatchEvent`), in this document or
// any other, and the page that embeds the frame cannot reach into it at all. "Approve" stays
// disabled until the browser says the dialog is really visible (IntersectionObserver v2: not
// covered, not transparent, not transformed), so a page cannot hide the frame under a decoy and
// harvest a click; where the browser cannot tell, it waits a moment before it arms.

/** How long "Approve" stays disabled after the dialog shows where visibility cannot be tracked. */
export const ARMING_DELAY_MS = 500

export type ConsentDialogElements = {
  /** The dialog box (role=dialog, aria-modal), hidden while nothing is pending. */
  readonly dialog: HTMLElement
  readonly title: HTMLElement
  readonly origin: HTMLElement
  readonly warnings: HTMLElement
  readonly rows: HTMLElement
  readonly tree: HTMLElement
  readonly rawBox: HTMLDetailsElement
  readonly raw: HTMLElement
  readonly simulation: HTMLElement
  readonly refusal: HTMLElement
  readonly approve: HTMLButtonElement
  readonly reject: HTMLButtonElement
}

/**
 * Shows `review` and resolves `true` when the user approves with a trusted activation of
 * "Approve", `false` on "Reject" or Escape. One review at a time.
 *
 * @example
 * if (!(await askUser(elements, review))) throw new FrameError(USER_REJECTED.message, USER_REJECTED.code)
 */
export function askUser(elements: ConsentDialogElements, review: Review, log: (message: string) => void, signal?: AbortSignal): Promise<boolean> {
  const { dialog, approve, reject } = elements
  render(elements, review)
  return new Promise((resolve) => {
    const disarm = arm(approve, review.refusal === undefined)
    const finish = (approved: boolean) => {
      disarm()
      approve.removeEventListener('click', onApprove)
      reject.removeEventListener('click', onReject)
      document.removeEventListener('keydown', onKey, true)
      signal?.removeEventListener('abort', onAbort)
      dialog.hidden = true
      clear(elements)
      resolve(approved)
    }
    const onApprove = (event: MouseEvent) => {
      if (!event.isTrusted) {
        log('ignored a click on Approve that a script made')
        return
      }
      if (approve.disabled || review.refusal !== undefined) return
      finish(true)
    }
    const onReject = (event: MouseEvent) => {
      if (event.isTrusted) finish(false)
    }
    const onKey = (event: KeyboardEvent) => {
      if (!event.isTrusted) return
      if (event.key === 'Escape') {
        event.preventDefault()
        finish(false)
      } else if (event.key === 'Tab') trapFocus(dialog, event)
    }
    const onAbort = () => finish(false)
    signal?.addEventListener('abort', onAbort)
    approve.addEventListener('click', onApprove)
    reject.addEventListener('click', onReject)
    document.addEventListener('keydown', onKey, true)
    dialog.hidden = false
    elements.title.focus()
  })
}

/**
 * Shows why a request was refused (it was already answered with the error): only "Reject",
 * which closes the dialog. Answers what closes it from outside, for the next request.
 *
 * @example
 * closeRefusal = tellRefusal(elements, parentOrigin, error.message)
 */
export function tellRefusal(elements: ConsentDialogElements, origin: string, reason: string): () => void {
  // A request still waiting for the user keeps the dialog; the parent has the error all the same.
  if (!elements.dialog.hidden) return () => undefined
  const closer = new AbortController()
  const refusal = `${reason.charAt(0).toUpperCase()}${reason.slice(1)}.`
  void askUser(elements, { kind: 'message', title: t('cannotSign'), origin, rows: [], warnings: [], refusal }, () => undefined, closer.signal)
  return () => closer.abort()
}

/** Keeps Tab and Shift+Tab inside the dialog. */
function trapFocus(dialog: HTMLElement, event: KeyboardEvent) {
  const focusable = [...dialog.querySelectorAll<HTMLElement>('button:not([disabled]), summary, [tabindex="0"]')].filter(
    (candidate) => candidate.offsetParent !== null || candidate === document.activeElement,
  )
  const first = focusable[0]
  const last = focusable.at(-1)
  if (!first || !last) {
    event.preventDefault()
    return
  }
  const active = document.activeElement
  const inside = active instanceof HTMLElement && dialog.contains(active) && focusable.includes(active)
  if (event.shiftKey && (!inside || active === first)) {
    event.preventDefault()
    last.focus()
  } else if (!event.shiftKey && (!inside || active === last)) {
    event.preventDefault()
    first.focus()
  }
}

/** Enables "Approve" while the browser reports it fully visible; returns what stops watching. */
function arm(approve: HTMLButtonElement, allowed: boolean): () => void {
  approve.hidden = !allowed
  approve.disabled = true
  if (!allowed) return () => undefined
  if ('isVisible' in IntersectionObserverEntry.prototype) {
    // Watched from the second frame the dialog is drawn in, not the first: the app shows this
    // frame's iframe as it sends the request, and a report made in the frame in which the iframe
    // appeared says "not visible" (the page's hit test has not caught up). The next report comes
    // only the observer's 100 ms later, so a review shown within a few ms of its request armed
    // 100 ms late, at random. A later start only ever arms later, never sooner.
    let observer: IntersectionObserver | undefined
    let drawn = requestAnimationFrame(() => {
      drawn = requestAnimationFrame(() => {
        observer = new IntersectionObserver(
          (entries) => {
            const entry = entries.at(-1) as (IntersectionObserverEntry & { isVisible?: boolean }) | undefined
            approve.disabled = !entry?.isVisible
          },
          { threshold: [1], trackVisibility: true, delay: 100 } as IntersectionObserverInit,
        )
        observer.observe(approve)
      })
    })
    return () => {
      cancelAnimationFrame(drawn)
      observer?.disconnect()
    }
  }
  const timer = setTimeout(() => {
    approve.disabled = false
  }, ARMING_DELAY_MS)
  return () => clearTimeout(timer)
}

function render(elements: ConsentDialogElements, review: Review) {
  elements.title.textContent = display(review.title)
  elements.origin.textContent = t('requestedBy', { origin: review.origin })
  for (const warning of review.warnings) {
    const item = document.createElement('li')
    item.className = warning.level
    item.textContent = display(warning.text)
    elements.warnings.append(item)
  }
  elements.warnings.hidden = review.warnings.length === 0
  for (const row of review.rows) {
    const term = document.createElement('dt')
    term.textContent = display(row.label)
    const detail = document.createElement('dd')
    detail.textContent = displayRow(row.label, row.value)
    if (row.tone) detail.className = row.tone
    elements.rows.append(term, detail)
  }
  elements.rows.hidden = review.rows.length === 0
  if (review.tree?.length) elements.tree.append(treeList(review.tree, review.kind !== 'typedData'))
  elements.tree.hidden = !review.tree?.length
  elements.raw.textContent = review.raw ?? ''
  elements.rawBox.open = false
  elements.rawBox.hidden = review.raw === undefined
  elements.refusal.textContent = review.refusal === undefined ? '' : display(review.refusal)
  elements.refusal.hidden = review.refusal === undefined
  elements.simulation.textContent = ''
  elements.simulation.hidden = review.simulation === undefined
  if (review.simulation) {
    elements.simulation.textContent = t('simulating')
    const simulation = review.simulation
    simulation.then(
      (result) => {
        if (elements.simulation.textContent === t('simulating')) elements.simulation.textContent = describeSimulation(result)
      },
      () => {
        elements.simulation.textContent = t('simulationFailed')
      },
    )
  }
}

/** `decoded`: the review wrote the tree's values (a call's, a grant's), not the request (typed data's message). */
function treeList(nodes: readonly ReviewNode[], decoded: boolean): HTMLUListElement {
  const list = document.createElement('ul')
  for (const node of nodes) {
    const item = document.createElement('li')
    const label = document.createElement('span')
    label.className = 'tree-label'
    label.textContent = display(node.label)
    item.append(label)
    if (node.value !== undefined) item.append(' ', treeValue(node.value, decoded))
    if (node.children?.length) item.append(treeList(node.children, decoded))
    list.append(item)
  }
  return list
}

/** Hex data longer than a selector and one word (undecoded calldata): folded under its size, one click away, so the review's decoded rows and Approve stay in view. */
const FOLDED_HEX = /^0x(?:[0-9a-fA-F]{2}){37,}$/

function treeValue(text: string, decoded: boolean): HTMLElement {
  if (!FOLDED_HEX.test(text)) {
    const value = document.createElement('span')
    value.textContent = displayValue(text, decoded)
    return value
  }
  const box = document.createElement('details')
  box.className = 'tree-data'
  const summary = document.createElement('summary')
  summary.textContent = t('dataBytes', { count: (text.length - 2) / 2 })
  const code = document.createElement('code')
  code.textContent = text
  box.append(summary, code)
  return box
}

function describeSimulation(result: SimulationResult): string {
  if (result.status !== 'ok') return t(result.status === 'reverted' ? 'simReverted' : 'simUnavailable', { reason: display(result.reason) }, true)
  const lines = [...result.sends, ...result.receives].map(display)
  return lines.length ? lines.join('. ') : t('simulationNoChanges')
}

function clear(elements: ConsentDialogElements) {
  for (const container of [elements.warnings, elements.rows, elements.tree]) container.replaceChildren()
  for (const text of [elements.title, elements.origin, elements.raw, elements.simulation, elements.refusal]) text.textContent = ''
}
