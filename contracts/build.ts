import { readFileSync, writeFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'

// Compiles our contracts (the executor, the demo's test token, the two paymasters) with the solc pinned in the root package.json (npm `solc`, exact
// version) against the OpenZeppelin Contracts pinned there too (read from node_modules, never
// copied in) and writes the artifacts that devnet deploys and the embedded wallet's constants come
// from. `npm run build:contracts` rewrites them; each contract's test rebuilds and compares.

const here = dirname(fileURLToPath(import.meta.url))
const require = createRequire(import.meta.url)
const OPENZEPPELIN = '@openzeppelin/contracts'
/** The contracts this build compiles, each from `<name>.sol` to `<name>.json` beside this file. */
export const CONTRACTS = ['BatchExecutor', 'TestToken', 'SponsorPaymaster', 'TokenPaymaster'] as const
export type ContractName = (typeof CONTRACTS)[number]
export const sourcePath = (name: ContractName) => join(here, `${name}.sol`)
export const artifactPath = (name: ContractName) => join(here, `${name}.json`)
export const SOURCE_PATH = sourcePath('BatchExecutor')
export const ARTIFACT_PATH = artifactPath('BatchExecutor')

/** Everything that decides the bytes, checked in with them. */
export const SETTINGS = {
  optimizer: { enabled: true, runs: 200 },
  // The fork the local chains run and the oldest that has EIP-7702.
  evmVersion: 'prague',
  outputSelection: { '*': { '*': ['abi', 'evm.bytecode.object', 'evm.deployedBytecode.object'] } },
} as const

export type Artifact<name extends ContractName = ContractName> = {
  contractName: name
  source: string
  compiler: string
  /** The OpenZeppelin Contracts release the source imports (its files are part of the metadata hash). */
  openzeppelin: string
  settings: { optimizer: { enabled: boolean; runs: number }; evmVersion: string }
  abi: readonly unknown[]
  bytecode: `0x${string}`
  deployedBytecode: `0x${string}`
}

type SolcOutput = {
  errors?: { severity: string; formattedMessage: string }[]
  contracts: Record<string, Record<string, { abi: unknown[]; evm: { bytecode: { object: string }; deployedBytecode: { object: string } } }>>
}

/**
 * solc's import callback: OpenZeppelin's files by their npm name, from the installed package only,
 * so the source unit names (and with them the metadata hash) do not depend on where the repo lives.
 */
function findImport(path: string): { contents: string } | { error: string } {
  if (!path.startsWith(`${OPENZEPPELIN}/`)) return { error: `only ${OPENZEPPELIN} imports resolve, not ${path}` }
  try {
    return { contents: readFileSync(require.resolve(path), 'utf8') }
  } catch {
    return { error: `${path} is not in the installed ${OPENZEPPELIN}` }
  }
}

/**
 * Compiles `<name>.sol` with the pinned solc; throws on any error or warning.
 *
 * @example
 * const artifact = compileContract('TestToken')
 */
export function compileContract<name extends ContractName>(name: name): Artifact<name> {
  const solc = require('solc') as { compile(input: string, callbacks: { import: typeof findImport }): string; version(): string }
  const source = `${name}.sol`
  const input = { language: 'Solidity', sources: { [source]: { content: readFileSync(sourcePath(name), 'utf8') } }, settings: SETTINGS }
  const output = JSON.parse(solc.compile(JSON.stringify(input), { import: findImport })) as SolcOutput
  const problems = (output.errors ?? []).map((error) => error.formattedMessage)
  if (problems.length) throw new Error(`solc ${solc.version()}:\n${problems.join('\n')}`)
  const contract = output.contracts[source]?.[name]
  if (!contract) throw new Error(`solc produced no ${name}`)
  return {
    contractName: name,
    source,
    compiler: solc.version(),
    openzeppelin: (require(`${OPENZEPPELIN}/package.json`) as { version: string }).version,
    settings: { optimizer: SETTINGS.optimizer, evmVersion: SETTINGS.evmVersion },
    abi: contract.abi,
    bytecode: `0x${contract.evm.bytecode.object}`,
    deployedBytecode: `0x${contract.evm.deployedBytecode.object}`,
  }
}

/**
 * Compiles BatchExecutor.sol with the pinned solc; throws on any error or warning.
 *
 * @example
 * const artifact = compileBatchExecutor()
 */
export const compileBatchExecutor = () => compileContract('BatchExecutor')

/** The artifact as it is written to disk: what the rebuild test compares byte for byte. */
export const serializeArtifact = (artifact: Artifact) => `${JSON.stringify(artifact, null, 2)}\n`

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  for (const name of CONTRACTS) {
    writeFileSync(artifactPath(name), serializeArtifact(compileContract(name)))
    console.log(`wrote ${artifactPath(name)}`)
  }
}
