import { resolve } from 'node:path'
import react from '@vitejs/plugin-react'
import { defaultClientConditions, defineConfig } from 'vite'

/** The demo resolves workspace packages from source (the `source` export condition). */
export default defineConfig({
  root: import.meta.dirname,
  plugins: [react()],
  resolve: { conditions: ['source', ...defaultClientConditions] },
  // The demo bundles the dev wallet (viem accounts, secp256k1), so its entry is larger than an app's.
  // Two pages: the demo, and the OAuth callback page the sign-in popup loads (oauth/callback.html,
  // served for /oauth/callback), which must not load the demo to hand the answer on.
  build: {
    outDir: 'dist',
    emptyOutDir: true,
    manifest: true,
    target: 'es2022',
    chunkSizeWarningLimit: 800,
    rolldownOptions: { input: { main: resolve(import.meta.dirname, 'index.html'), oauthCallback: resolve(import.meta.dirname, 'oauth/callback.html') } },
  },
})
