import { defaultClientConditions, defineConfig } from 'vite';

// `npm run dev -w @wharf/admin` proxies the API to a server on 127.0.0.1:8080 (override: WHARF_URL).
const target = process.env.WHARF_URL ?? 'http://127.0.0.1:8080';

export default defineConfig({
  base: '/',
  // @wharf/wire is bundled from its sources: the UI builds without the packages' dist/.
  resolve: { conditions: ['wharf-source', ...defaultClientConditions] },
  build: { outDir: 'dist', emptyOutDir: true, target: 'es2022', chunkSizeWarningLimit: 200 },
  server: {
    proxy: {
      '/api': target,
      '/openapi.json': target,
      '/ws': { target: target.replace(/^http/, 'ws'), ws: true },
    },
  },
});
