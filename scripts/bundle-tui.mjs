#!/usr/bin/env node
// Build step after tsc: the TUI's Ink + React half (dist/ui/tui/mount.js, loaded only when a
// terminal shows the TUI) becomes one file. Node 20 has no compile cache, and loading Ink's many
// small modules costs ~0.5 s of CPU per run; the bundle loads in ~0.13 s. Everything else stays as
// tsc emits it.
import { build } from 'esbuild';
import { fileURLToPath } from 'node:url';

const target = fileURLToPath(new URL('../dist/ui/tui/mount.js', import.meta.url));

await build({
  entryPoints: [target],
  outfile: target,
  allowOverwrite: true,
  bundle: true,
  platform: 'node',
  format: 'esm',
  target: 'node20',
  sourcemap: false,
  logLevel: 'warning',
  define: { 'process.env.NODE_ENV': '"production"' },
  // Ink's CommonJS dependencies call require(); give the ESM bundle one.
  banner: { js: "import { createRequire as __ibfleetRequire } from 'node:module'; const require = __ibfleetRequire(import.meta.url);" },
  plugins: [
    {
      // Ink imports React DevTools only when DEV=true; ibfleet never ships it.
      name: 'no-devtools',
      setup(b) {
        b.onResolve({ filter: /^react-devtools-core$/ }, () => ({ path: 'react-devtools-core', namespace: 'stub' }));
        b.onLoad({ filter: /.*/, namespace: 'stub' }, () => ({ contents: 'export default { initialize() {}, connectToDevTools() {} };', loader: 'js' }));
      },
    },
  ],
});
