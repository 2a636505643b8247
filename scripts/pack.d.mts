// Types of scripts/pack.mjs for the TypeScript tests and benchmarks that import it.

/** The repository root. */
export declare const repoRoot: string

/** A package under packages/, as its package.json names it. */
export type LibraryPackage = { name: string; version: string; directory: string; private: boolean }

/** A packed tarball: `tarball` is its absolute path. */
export type PackedPackage = { name: string; version: string; directory: string; tarball: string }

/** Every package under packages/, sorted by directory. */
export declare function libraryPackages(): LibraryPackage[]

/** The packages `npm publish` would publish: every library package that is not private. */
export declare function publishablePackages(): LibraryPackage[]

/**
 * Builds (unless `build: false`) and packs every publishable package into `destination` (default: a
 * new temporary directory).
 *
 * @example
 * const packed = await packPackages({ destination: '/tmp/latchkey-packs' })
 */
export declare function packPackages(options?: { destination?: string; build?: boolean; log?: (line: string) => void }): Promise<PackedPackage[]>
