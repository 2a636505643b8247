// Entry point of @latchkey/service: the runtime the relay, kms and backend bins share.
export { auditSettings, auditVerifyCommand, DEVELOPMENT_AUDIT_KEY } from './audit.js'
export { SettingsError } from './errors.js'
export { closeGracefully, createHttpObserver, type HttpObserver, type HttpObserverOptions, type InflightRequest, pathOf } from './http.js'
export { type CreateLoggerOptions, createLogger, currentRequestId, LOG_LEVELS, type Logger, type LogLevel, scrub, withRequestId } from './logger.js'
export { createMetrics, type MetricDefinition, type Metrics, routeObserver, serveMetrics, UNMATCHED_ROUTE } from './metrics.js'
export {
  type BaseSettings,
  baseSettings,
  EXIT,
  runService,
  type ServiceCommand,
  type ServiceContext,
  type ServiceDefinition,
  type StartedService,
} from './run.js'
export {
  type AnySetting,
  checkOrigin,
  checkUrl,
  choice,
  custom,
  type Environment,
  hexBytes,
  integer,
  list,
  origin,
  type ParsedSettings,
  parseSettings,
  port,
  productionGaps,
  type Setting,
  type SettingValues,
  secret,
  secretUrl,
  settingLabel,
  settingsHelp,
  text,
  toggle,
  url,
  withoutCredentials,
} from './settings.js'
export { recordSpan, type SpanOptions, startTracing, type TracingOptions, traceHeaders, tracingOn, withSpan } from './tracing.js'
