/**
 * The routing program every host runs, host/ibfleet-routes: one POSIX sh file of the repository,
 * the same bytes on every host of an ibfleet version, read once from the package (it ships beside
 * dist/). What is a host's own is data (render/routes-data.ts), which the program checks before it
 * acts. Its `VERSION=` line is the version of the data it takes: routes.conf's first setting names it.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { PACKAGE_ROOT } from '../package-root.js';

export const ROUTES_PROGRAM_SOURCE = join(PACKAGE_ROOT, 'host', 'ibfleet-routes');

/** The program's text, exactly as the repository holds it. */
export const ROUTES_PROGRAM: string = readFileSync(ROUTES_PROGRAM_SOURCE, 'utf8');

/** The version of the program and of the data it takes (its `VERSION=N` line). */
export const ROUTES_PROGRAM_VERSION: string = (() => {
  const match = /^VERSION=(\d+)$/m.exec(ROUTES_PROGRAM);
  if (!match) throw new Error(`ibfleet: ${ROUTES_PROGRAM_SOURCE} has no VERSION= line`);
  return match[1]!;
})();

/**
 * The route watcher, host/ibfleet-routes-watch (steps/persist/watch.ts says where it goes): the
 * same bytes on every host; it reads its subnet from routes.conf.
 */
export const ROUTES_WATCH_PROGRAM: string = readFileSync(join(PACKAGE_ROOT, 'host', 'ibfleet-routes-watch'), 'utf8');
