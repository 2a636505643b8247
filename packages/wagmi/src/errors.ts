import { BaseError, type BaseErrorParameters } from '@latchkey/core'

/** The wagmi majors this package is built and tested against. */
export const SUPPORTED_WAGMI_MAJORS = [2, 3] as const

export type UnsupportedWagmiVersionErrorType = UnsupportedWagmiVersionError & { name: 'UnsupportedWagmiVersionError' }
/**
 * The app's wagmi is outside the majors @latchkey/wagmi supports (2 and 3). npm refuses such an
 * install through the peer range; this is the same refusal for installs that forced it.
 *
 * @example
 * try { walletConnect() } catch (e) { if (e instanceof UnsupportedWagmiVersionError) console.log(e.version) }
 */
export class UnsupportedWagmiVersionError extends BaseError {
  override name = 'UnsupportedWagmiVersionError'
  override code = 'unsupported_wagmi_version'
  /** The wagmi version found. */
  wagmiVersion: string
  constructor({ version, ...parameters }: BaseErrorParameters & { version: string }) {
    super('Unsupported wagmi version', {
      details: `@latchkey/wagmi supports wagmi ${SUPPORTED_WAGMI_MAJORS.join(' and ')}; this app has wagmi ${version}.`,
      ...parameters,
    })
    this.wagmiVersion = version
  }
}
