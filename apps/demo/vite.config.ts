import react from '@vitejs/plugin-react'
import { defaultClientConditions, defineConfig } from 'vite'

/** The demo resolves workspace packages from source (the `source` export condition). */
export default defineConfig({
  root: import.meta.dirname,
  plugins: [react()],
  resolve: { conditions: ['source', ...defaultClientConditions] },
  // The demo bundles the dev wallet (viem accounts, secp256k1), so its entry is larger than an app's.
  build: { outDir: 'dist', emptyOutDir: true, manifest: true, target: 'es2022', chunkSizeWarningLimit: 800 },
})
