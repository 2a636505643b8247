export declare function ensurePostgres(): string
/** A throwaway cluster's files and control, for tests that back it up and restore it. */
export type PostgresCluster = {
  bin: string
  dir: string
  data: string
  port: number
  owner: { uid?: number; gid?: number }
  start(): void
  stopServer(): void
}
export declare function startPostgres(): Promise<{ url: string; stop(): Promise<void>; cluster: PostgresCluster }>
