import type { TestProject } from 'vitest/node'
import { startPostgres } from '../../../scripts/ensure-postgres.mjs'

declare module 'vitest' {
  export interface ProvidedContext {
    /** A throwaway PostgreSQL cluster's database, for the kms suite's PostgreSQL run (database.ts). */
    postgresUrl: string
  }
}

/** Global setup of vitest.postgres.config.ts: a real PostgreSQL for the run, installed first when missing. */
export default async function setup(project: TestProject) {
  const postgres: { url: string; stop: () => Promise<void> } = await startPostgres()
  project.provide('postgresUrl', postgres.url)
  return () => postgres.stop()
}
