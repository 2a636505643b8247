// Camera scanning where the browser has the Shape Detection API (Chrome on Android, macOS and
// ChromeOS; not desktop Linux). Elsewhere the page offers only the "Pairing URI" textbox.

type Detected = { rawValue: string }
type BarcodeDetectorLike = { detect(source: CanvasImageSource): Promise<Detected[]> }
type BarcodeDetectorConstructor = new (options: { formats: string[] }) => BarcodeDetectorLike

function detectorClass(): BarcodeDetectorConstructor | undefined {
  return (globalThis as { BarcodeDetector?: BarcodeDetectorConstructor }).BarcodeDetector
}

/** Whether this browser can read a QR code from the camera. */
export function canScan(): boolean {
  return detectorClass() !== undefined && typeof navigator !== 'undefined' && typeof navigator.mediaDevices?.getUserMedia === 'function'
}

/**
 * Opens the back camera and resolves with the first `wc:` URI a QR code shows; the camera is
 * released either way. Rejects when the user refuses the camera.
 *
 * @example
 * await wallet.pair(await scanQrCode())
 */
export async function scanQrCode(): Promise<string> {
  const Detector = detectorClass()
  if (!Detector) throw new Error('This browser cannot scan QR codes; paste the pairing URI instead')
  const detector = new Detector({ formats: ['qr_code'] })
  const stream = await navigator.mediaDevices.getUserMedia({ video: { facingMode: 'environment' } })
  const video = document.createElement('video')
  video.muted = true
  video.playsInline = true
  video.srcObject = stream
  try {
    await video.play()
    // One detection per frame until a WalletConnect code shows up.
    for (;;) {
      await new Promise<void>((resolve) => requestAnimationFrame(() => resolve()))
      const found = (await detector.detect(video)).find((code) => code.rawValue.startsWith('wc:'))
      if (found) return found.rawValue
    }
  } finally {
    for (const track of stream.getTracks()) track.stop()
  }
}
