import { type AltoInstance, alto } from './alto.js'
import type { AnvilInstance } from './anvil.js'
import { ENTRY_POINT_ADDRESS } from './entryPoint.js'

/** The stack's bundlers: one Alto per chain, each for EntryPoint v0.8. */
export type BundlerInstances = { readonly a: AltoInstance; readonly b: AltoInstance }

/**
 * An Alto bundler for each of the stack's chains, on its own port. Each starts once its chain runs
 * and carries the EntryPoint.
 *
 * @example
 * const bundlers = bundlerInstances({ chainA, chainB, ports: { bundlerA: 4337, bundlerB: 4338 } })
 */
export function bundlerInstances(parameters: {
  chainA: AnvilInstance
  chainB: AnvilInstance
  ports: { bundlerA: number; bundlerB: number }
}): BundlerInstances {
  const { chainA, chainB, ports } = parameters
  return {
    a: alto({ name: 'bundler A', port: ports.bundlerA, rpcUrl: chainA.url, entryPoint: ENTRY_POINT_ADDRESS }),
    b: alto({ name: 'bundler B', port: ports.bundlerB, rpcUrl: chainB.url, entryPoint: ENTRY_POINT_ADDRESS }),
  }
}
