/**
 * How to print a command line that runs this very ibfleet: `ibfleet` when that is what PATH finds
 * (scripts/setup links it), else `node <full path of dist/cli.js>` — so a printed "Next:" line runs
 * as printed, from any directory.
 */
import { existsSync, realpathSync } from 'node:fs';
import { delimiter, join } from 'node:path';
import { PACKAGE_ROOT } from '../package-root.js';
import { shellQuote } from '../script/shell.js';

export function selfCommand(env: Readonly<Record<string, string | undefined>>): string {
  const cli = join(PACKAGE_ROOT, 'dist/cli.js');
  const self = existsSync(cli) ? realpathSync(cli) : cli;
  const full = `node ${shellQuote(self)}`;
  for (const dir of (env.PATH ?? '').split(delimiter)) {
    if (dir === '') continue;
    const candidate = join(dir, 'ibfleet');
    let resolved: string | undefined;
    try {
      resolved = realpathSync(candidate);
    } catch {
      continue;
    }
    // The first ibfleet on PATH is the one a shell runs: it must be this one.
    return resolved === self ? 'ibfleet' : full;
  }
  return full;
}
