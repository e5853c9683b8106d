/**
 * `ibfleet --help`, `--json` and plain output must never load React: the TUI's entry module
 * (src/ui/tui/index.ts) reaches Ink and React only through a dynamic import inside createTui().
 * Checked on the source's static import graph, and by loading the entry in a fresh process.
 */
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const TUI = resolve(dirname(fileURLToPath(import.meta.url)), '../../src/ui/tui');

function staticImports(file: string): string[] {
  const source = readFileSync(file, 'utf8');
  const specifiers: string[] = [];
  for (const match of source.matchAll(/^\s*(import|export)\s+(?!type\b)[^'"]*?from\s+'([^']+)'/gm))
    specifiers.push(match[2]!);
  for (const match of source.matchAll(/^\s*import\s+'([^']+)'/gm)) specifiers.push(match[1]!);
  return specifiers;
}

/** Every module reachable from `file` through static, non-type imports. */
function closure(file: string, seen = new Set<string>()): Set<string> {
  if (seen.has(file)) return seen;
  seen.add(file);
  for (const specifier of staticImports(file)) {
    if (!specifier.startsWith('.')) {
      seen.add(specifier);
      continue;
    }
    const base = resolve(dirname(file), specifier).replace(/\.js$/, '');
    const candidates = [`${base}.ts`, `${base}.tsx`];
    const found = candidates.find((c) => {
      try {
        readFileSync(c);
        return true;
      } catch {
        return false;
      }
    });
    if (found) closure(found, seen);
  }
  return seen;
}

describe('the TUI entry point is light', () => {
  it('statically reaches no ink, react or component module', () => {
    const reached = [...closure(resolve(TUI, 'index.ts'))];
    expect(reached.filter((m) => m === 'ink' || m.startsWith('react') || m.endsWith('.tsx'))).toEqual([]);
  });

  it('the pure modules (state, layout, lines, format, fold, matrix) import neither ink nor react', () => {
    for (const name of [
      'state.ts',
      'layout.ts',
      'lines.ts',
      'format.ts',
      '../text/fold.ts',
      'matrix.ts',
      'color.ts',
      'spinner.ts',
    ]) {
      const reached = [...closure(resolve(TUI, name))];
      expect(
        reached.filter((m) => m === 'ink' || m.startsWith('react') || m.startsWith('node:')),
        name,
      ).toEqual([]);
    }
  });

  /** Imports `module` in a fresh Node (with tsx) and lists the ink/react files it loaded. */
  function loadedBy(module: string): string[] {
    const hook = `let port; export function initialize(data) { port = data.port; }
      export async function resolve(specifier, context, next) { const r = await next(specifier, context); port.postMessage(r.url); return r; }`;
    const script = `
      import { register } from 'node:module';
      import { MessageChannel } from 'node:worker_threads';
      const { port1, port2 } = new MessageChannel();
      const seen = [];
      port1.on('message', (url) => seen.push(url));
      register('data:text/javascript,' + encodeURIComponent(${JSON.stringify(hook)}), { data: { port: port2 }, transferList: [port2] });
      await import(${JSON.stringify(module)});
      await new Promise((resolve) => setTimeout(resolve, 100));
      port1.close();
      console.log(JSON.stringify(seen.filter((url) => ['/node_modules/react/', '/node_modules/ink/'].some((dir) => url.includes(dir)))));
    `;
    const out = execFileSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], {
      encoding: 'utf8',
      cwd: resolve(TUI, '../../..'),
    });
    return JSON.parse(out.trim().split('\n').at(-1)!) as string[];
  }

  it('importing the entry in a fresh process loads no React or Ink (and the check does see them when they load)', () => {
    expect(loadedBy(resolve(TUI, 'index.ts'))).toEqual([]);
    expect(loadedBy(resolve(TUI, 'mount.tsx')).some((url) => url.includes('node_modules/ink/'))).toBe(true);
  });
});
