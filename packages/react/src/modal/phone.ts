/**
 * A phone or tablet: the primary pointer is a finger. There a QR code is no use (the camera that
 * would scan it is this device's), and an injected wallet means a wallet's in-app browser.
 */
export const isTouchDevice = () => typeof matchMedia === 'function' && matchMedia('(pointer: coarse)').matches
