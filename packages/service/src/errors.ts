/**
 * A setting that cannot be used: an unknown flag, a malformed value, a secret file that cannot be
 * read, or a development default in production. The message is one line that names the setting by
 * its flag and environment variable. A service refuses to start on it (exit code 2).
 *
 * @example
 * try {
 *   parseSettings(settings, ['--port', 'x'], {})
 * } catch (error) {
 *   if (error instanceof SettingsError) console.error(error.message) // --port must be a port number from 1 to 65535, got "x"
 * }
 */
export class SettingsError extends Error {
  override name = 'SettingsError'
  /** `invalid`: the value given is wrong; `production`: production mode needs a setting that was left to its development default. */
  readonly code: 'invalid' | 'production'
  constructor(message: string, code: 'invalid' | 'production' = 'invalid') {
    super(message)
    this.code = code
  }
}
