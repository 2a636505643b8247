import { join } from 'node:path'
import type { NextConfig } from 'next'

// The consumer directory (one level up) holds node_modules and the lockfile the apps share.
const config: NextConfig = { turbopack: { root: join(import.meta.dirname, '..') } }

export default config
