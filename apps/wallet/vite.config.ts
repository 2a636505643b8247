import react from '@vitejs/plugin-react'
import { defaultClientConditions, defineConfig } from 'vite'

/** The wallet resolves workspace packages from source (the `source` export condition). */
export default defineConfig({
  root: import.meta.dirname,
  plugins: [react()],
  resolve: { conditions: ['source', ...defaultClientConditions] },
  build: { outDir: 'dist', emptyOutDir: true, manifest: true, target: 'es2022' },
})
