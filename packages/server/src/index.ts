// Entry point of @latchkey/server.
export { createServerApp, LIMITS, SESSION_COOKIE, ServerError, type ServerAppOptions, WALLET_NAME } from './app.js'
export { RECOVERY_CODE_SECONDS } from './routes/recoveryStart.js'
export { SESSION_KEY_SECONDS } from './internal/schemas.js'
export { type AppServerOptions, createAppServer } from './service.js'
export { type AccountRow, type KnownAccount, openStore, type PasskeyAccountRow, type SessionKind, type SessionRow, STORE_LAYOUT, type Store } from './store.js'
