import { execFileSync } from 'node:child_process'
import { createHash, randomUUID } from 'node:crypto'
import { existsSync, readFileSync } from 'node:fs'
import { mkdir, readdir, readlink, realpath, rename, rm, symlink } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'

// The release before this one, for the tests that run it beside the current code on one database
// (UPGRADE.md, "How this is tested"): release/previous.json names a commit of main, and its source
// is extracted with `git archive` next to the current dependencies, once per commit and checkout.

const repoRoot = fileURLToPath(new URL('../', import.meta.url))

/** The commit release/previous.json names as the previous release, and why that one. */
export const previousRelease: { commit: string; note: string } = JSON.parse(readFileSync(join(repoRoot, 'release/previous.json'), 'utf8'))

const git = (...args: string[]) => execFileSync('git', args, { cwd: repoRoot, stdio: ['ignore', 'pipe', 'pipe'] })

/**
 * The directory holding the previous release's source (its packages and root package.json), with
 * a node_modules of the current dependencies in which the workspace packages are the release's
 * own. Extracted at the first call; later calls, and later runs on the same checkout, reuse it.
 * Throws when this clone lacks the commit (CI needs main's full history, not a shallow clone).
 *
 * @example
 * const root = await previousReleaseSource()
 * startCli(join(root, 'packages/kms/src/cli.ts'), ['migrate', 'status'], env, 'test', root)
 */
export async function previousReleaseSource(): Promise<string> {
  const { commit } = previousRelease
  if (!/^[0-9a-f]{40}$/.test(commit)) throw new Error(`release/previous.json: "commit" must be 40 hex digits, not ${JSON.stringify(commit)}`)
  const checkout = createHash('sha256').update(repoRoot).digest('hex').slice(0, 8)
  const target = join(tmpdir(), `latchkey-release-${commit.slice(0, 12)}-${checkout}`)
  if (existsSync(join(target, 'package.json'))) return target
  try {
    git('cat-file', '-e', `${commit}^{commit}`)
  } catch {
    throw new Error(
      `release/previous.json names commit ${commit}, which this clone does not have: the previous-release tests need main's full history (git fetch --unshallow, or a clone without --depth)`,
    )
  }
  // Built beside the target and renamed into place, so a run cut short or a concurrent run never
  // leaves a half-extracted tree where the next one looks.
  const building = `${target}.${randomUUID()}`
  await mkdir(building, { recursive: true })
  execFileSync('sh', ['-c', 'git archive --format=tar "$0" packages package.json | tar -x -C "$1"', commit, building], { cwd: repoRoot, stdio: 'pipe' })
  await linkDependencies(building)
  try {
    await rename(building, target)
  } catch (error) {
    // Another run renamed its copy first: use that one.
    await rm(building, { recursive: true, force: true })
    if (!existsSync(join(target, 'package.json'))) throw error
  }
  return target
}

/** node_modules for the release at `root`: the current dependencies, but @latchkey/* from the release's own packages. */
async function linkDependencies(root: string) {
  const modules = join(repoRoot, 'node_modules')
  await mkdir(join(root, 'node_modules/@latchkey'), { recursive: true })
  for (const entry of await readdir(modules)) {
    if (entry === '@latchkey') continue
    await symlink(await realpath(join(modules, entry)), join(root, 'node_modules', entry))
  }
  for (const entry of await readdir(join(modules, '@latchkey'))) {
    // ../../packages/kms: the same path inside the release, when the release has that package.
    const relative = await readlink(join(modules, '@latchkey', entry))
    if (existsSync(join(root, 'node_modules/@latchkey', relative))) await symlink(relative, join(root, 'node_modules/@latchkey', entry))
  }
  // Dependencies npm kept inside a package (a version apart from the root's).
  for (const entry of await readdir(join(repoRoot, 'packages'))) {
    const own = join(repoRoot, 'packages', entry, 'node_modules')
    if (existsSync(own) && existsSync(join(root, 'packages', entry))) await symlink(own, join(root, 'packages', entry, 'node_modules'))
  }
}
