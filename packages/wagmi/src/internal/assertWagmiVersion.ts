import { version as installed } from 'wagmi'
import { SUPPORTED_WAGMI_MAJORS, UnsupportedWagmiVersionError } from '../errors.js'

/** @internal Throws UnsupportedWagmiVersionError unless `version` (default: the installed wagmi's) is of a supported major. */
export function assertWagmiVersion(version: string = installed): void {
  const major = Number(/^(\d+)\./.exec(version)?.[1])
  if (!(SUPPORTED_WAGMI_MAJORS as readonly number[]).includes(major)) throw new UnsupportedWagmiVersionError({ version })
}
