import { type PointerEvent, type RefObject, useRef } from 'react'

/** How far (px) a downward drag of the sheet's handle must go to close it. */
export const SWIPE_CLOSE_DISTANCE = 80

/**
 * Drag-to-close for the bottom sheet: the sheet follows a downward drag that starts on its handle
 * or header; released past SWIPE_CLOSE_DISTANCE it closes, else it springs back.
 */
export function useSwipeToClose(sheet: RefObject<HTMLElement | null>, onClose: () => void) {
  const start = useRef<number>(undefined)
  const offset = (event: PointerEvent) => Math.max(0, event.clientY - (start.current ?? event.clientY))
  const move = (distance: number) => {
    if (sheet.current) sheet.current.style.transform = distance ? `translateY(${distance}px)` : ''
  }
  return {
    onPointerDown(event: PointerEvent) {
      // Buttons in the header (Close) keep their own click.
      if ((event.target as HTMLElement).closest('button')) return
      start.current = event.clientY
      event.currentTarget.setPointerCapture?.(event.pointerId)
    },
    onPointerMove(event: PointerEvent) {
      if (start.current !== undefined) move(offset(event))
    },
    onPointerUp(event: PointerEvent) {
      if (start.current === undefined) return
      const distance = offset(event)
      start.current = undefined
      move(0)
      if (distance > SWIPE_CLOSE_DISTANCE) onClose()
    },
    onPointerCancel() {
      start.current = undefined
      move(0)
    },
  }
}
