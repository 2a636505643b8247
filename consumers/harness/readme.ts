import { readFile } from 'node:fs/promises'
import { join } from 'node:path'
import { repositoryRoot } from './process.js'

/**
 * The integration example of the repository's README: the `tsx` code block under "Install in your app".
 *
 * @example
 * const example = await readmeExample() // "import { createClient } from '@latchkey/core'\n…"
 */
export async function readmeExample(): Promise<string> {
  const readme = await readFile(join(repositoryRoot, 'README.md'), 'utf8')
  const section = readme.split(/^## /m).find((part) => part.startsWith('Install in your app'))
  const block = section?.match(/```tsx\n([\s\S]*?)```/)?.[1]
  if (!block) throw new Error('README.md has no ```tsx block under "## Install in your app"')
  return block
}

/**
 * The README's integration example as the consumer apps hold it: the local chain of the test
 * (`./devChain`, chain id 31337 at the test's anvil) in place of mainnet and base.
 *
 * @example
 * expect(await readFile('apps/vite/src/App.tsx', 'utf8')).toBe(await readmeExampleOnDevChain())
 */
export async function readmeExampleOnDevChain(): Promise<string> {
  const example = await readmeExample()
  const replacements = [
    ["import { mainnet, base } from 'viem/chains'", "import { devChain } from './devChain'"],
    ['createClient({ chains: [mainnet, base] })', 'createClient({ chains: [devChain] })'],
  ] as const
  for (const [from] of replacements)
    if (!example.includes(from)) throw new Error(`README.md's integration example no longer has \`${from}\`: update the consumer apps and this harness with it`)
  return replacements.reduce((code, [from, to]) => code.replace(from, to), example)
}
