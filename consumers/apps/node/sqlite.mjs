// Plain Node ESM: the relay's SQLite store on the binding npm built from source in this install.
import { sqliteStore } from '@latchkey/relay'

const store = sqliteStore(':memory:')
await store.prune(Date.now())
await store.close()
console.log('sqlite store opened, pruned and closed')
