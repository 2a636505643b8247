import axe from 'axe-core'
import type { Frame, Page } from 'playwright-core'

// axe-core on a frame's open dialog, as e2e/a11y.e2e.ts runs it on the demo's modals: light and
// dark (prefers-color-scheme), on a desktop-sized and a phone-sized viewport. Lines name the
// violation and its nodes; `[]` when clean.

/** The viewports a dialog is checked at: a desktop, and an iPhone-sized phone. */
export const AXE_VIEWPORTS = { desktop: { width: 1280, height: 800 }, phone: { width: 390, height: 844 } } as const

/**
 * axe's violations in `frame`'s visible dialog, per colour scheme and viewport.
 *
 * @example
 * expect(await dialogViolations(page, frame, 'message')).toEqual([])
 */
export async function dialogViolations(page: Page, frame: Frame, state: string): Promise<string[]> {
  // Evaluated through the DevTools protocol: the frame's CSP (Trusted Types, no inline script) refuses a script tag.
  if (!(await frame.evaluate(() => 'axe' in window))) await frame.evaluate(`${axe.source}\n;0`)
  const found: string[] = []
  const viewport = page.viewportSize()
  for (const [device, size] of Object.entries(AXE_VIEWPORTS)) {
    await page.setViewportSize(size)
    for (const colorScheme of ['light', 'dark'] as const) {
      await page.emulateMedia({ colorScheme, reducedMotion: 'reduce' })
      const result = await frame.evaluate(async () => {
        const dialog = [...document.querySelectorAll<HTMLElement>('[role="dialog"]')].find((candidate) => !candidate.hidden)
        if (!dialog) throw new Error('no dialog is open')
        const { violations } = await (window as unknown as { axe: typeof axe }).axe.run(document, { resultTypes: ['violations'] })
        return violations.map((violation) => `${violation.id}: ${violation.nodes.map((node) => node.target.join(' ')).join(', ')}`)
      })
      found.push(...result.map((line) => `${state} (${device}, ${colorScheme}): ${line}`))
    }
  }
  if (viewport) await page.setViewportSize(viewport)
  await page.emulateMedia({ colorScheme: null, reducedMotion: null })
  return found
}
