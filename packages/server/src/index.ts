// Entry point of @latchkey/server.
export { createServerApp, LIMITS, SESSION_COOKIE, ServerError, type ServerAppOptions, WALLET_NAME } from './app.js'
export { type AppServerOptions, createAppServer } from './service.js'
export { openStore, type Store } from './store.js'
