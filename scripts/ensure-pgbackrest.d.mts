export declare function ensurePgBackRest(): string
export declare function pgBackRest(
  cluster: { dir: string; data: string; port: number; owner: { uid?: number; gid?: number } },
  options?: { stanza?: string },
): { archiveCommand: string; run(args: readonly string[]): string }
