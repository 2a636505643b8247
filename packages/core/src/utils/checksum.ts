import type { Address } from '../types.js'

/** viem's `getAddress`: the EIP-55 checksummed form of an address, or InvalidAddressError. */
export type ChecksumAddress = (address: string) => Address

let loading: Promise<ChecksumAddress> | undefined

/**
 * @internal viem's `getAddress`, downloaded on first call and shared afterwards. A failed download
 * is not remembered, so the next attempt tries again.
 *
 * @example
 * const checksum = await loadChecksumAddress()
 * checksum('0xf39fd6e51aad88f6f4ce6ab8827279cfffb92266') // '0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266'
 */
export function loadChecksumAddress(): Promise<ChecksumAddress> {
  loading ??= import('./getAddress.js').then(
    ({ getAddress }) =>
      (address: string) =>
        getAddress(address),
    (error: unknown) => {
      loading = undefined
      throw error
    },
  )
  return loading
}
