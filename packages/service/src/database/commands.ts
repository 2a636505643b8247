import { SettingsError } from '../errors.js'
import type { ServiceCommand } from '../run.js'
import { type AnySetting, type SettingValues, toggle } from '../settings.js'
import { type MigrationStatus, migrationStatus, runMigrations } from './migrations.js'
import type { Migration } from './open.js'

// `<bin> migrate status` and `<bin> migrate up [--dry-run]`, the same for every service with a
// database: an operator runs them before a rollout (a Kubernetes Job, a deploy step) and reads
// the JSON they print. The services also apply pending steps when they start.

export type MigrationCommandOptions<settings extends Record<string, AnySetting>> = {
  /** Names the migrations table, as the service opens its database. */
  service: string
  migrations: readonly Migration[]
  /** The settings that say where the service keeps its data (the serve command's own). */
  storeSettings: settings
  /** The database those settings name (a `postgres://` URL or a SQLite path), or undefined when none is given. */
  locate(values: SettingValues<settings>): string | undefined
  /** What to set when none is given, e.g. `--db / LATCHKEY_KMS_DB or DATABASE_URL`. */
  storeLabel: string
}

/**
 * The two migration commands of a service bin.
 *
 * @example
 * commands: { ...migrationCommands({ service: 'kms', migrations: KMS_MIGRATIONS, storeSettings, locate: urlOf, storeLabel: '--db or DATABASE_URL' }) }
 */
export function migrationCommands<settings extends Record<string, AnySetting>>(
  options: MigrationCommandOptions<settings>,
): { 'migrate status': ServiceCommand<settings>; 'migrate up': ServiceCommand<settings & { dryRun: ReturnType<typeof toggle> }> } {
  const target = (values: SettingValues<settings>, command: string) => {
    const url = options.locate(values)
    // A database in memory would be made, migrated and dropped: nothing an operator could mean.
    if (url === undefined) throw new SettingsError(`${command} works on the ${options.service}'s database: set ${options.storeLabel}, as the service has it`)
    return { url, service: options.service, migrations: options.migrations }
  }
  return {
    'migrate status': {
      summary:
        'Print the migrations the database has applied, those this version would apply, and whether this version may run on it (a newer version that only expanded the schema leaves it readable). Changes nothing.',
      settings: options.storeSettings,
      run: (values): Promise<MigrationStatus> => migrationStatus(target(values, 'migrate status')),
    },
    'migrate up': {
      summary: 'Apply the pending migrations in one transaction, as a start would; with --dry-run, run them and roll back. Prints the steps it ran.',
      settings: {
        ...options.storeSettings,
        dryRun: toggle({ flag: 'dry-run', description: 'Run the pending steps in a transaction that is rolled back: what would run, and proof that it runs.' }),
      },
      run: (values) => runMigrations({ ...target(values as SettingValues<settings>, 'migrate up'), dryRun: (values as { dryRun: boolean }).dryRun }),
    },
  }
}
