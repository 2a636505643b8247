// @vitest-environment happy-dom
import { afterEach, expect, test, vi } from 'vitest'
import { canScan, scanQrCode } from './scan.js'

// The camera and the Shape Detection API are the one part of the wallet no browser here has
// (desktop Linux Chromium lacks BarcodeDetector), so both are stood in for: a detector that
// sees a few frames, and a stream whose tracks record that they were stopped.

afterEach(() => {
  vi.unstubAllGlobals()
  vi.restoreAllMocks()
  Reflect.deleteProperty(navigator, 'mediaDevices')
})

function camera(frames: string[][]) {
  const stopped: boolean[] = []
  const track = { stop: () => stopped.push(true) }
  Object.defineProperty(navigator, 'mediaDevices', { value: { getUserMedia: async () => ({ getTracks: () => [track] }) }, configurable: true })
  vi.stubGlobal(
    'BarcodeDetector',
    class {
      async detect() {
        return (frames.shift() ?? []).map((rawValue) => ({ rawValue }))
      }
    },
  )
  vi.spyOn(HTMLMediaElement.prototype, 'play').mockResolvedValue(undefined)
  vi.spyOn(HTMLMediaElement.prototype, 'srcObject', 'set').mockImplementation(() => undefined)
  return { stopped }
}

test('default: resolves with the first wc: code the camera sees and releases the camera', async () => {
  const { stopped } = camera([[], ['https://example.com'], ['wc:abc@2?relay-protocol=irn&symKey=00&expiryTimestamp=1']])
  expect(canScan()).toBe(true)
  expect(await scanQrCode()).toBe('wc:abc@2?relay-protocol=irn&symKey=00&expiryTimestamp=1')
  expect(stopped).toEqual([true])
})

test('error: without BarcodeDetector there is no scan button and scanning says to paste', async () => {
  expect(canScan()).toBe(false)
  await expect(scanQrCode()).rejects.toThrow('This browser cannot scan QR codes; paste the pairing URI instead')
})
