/**
 * The routing program as a host has it: host/ibfleet-routes and, beside it, the routes.conf ibfleet
 * renders for the host — what the tests that run the program on a namespace host write.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Fleet, Host } from '../../src/inventory/model.js';
import type { Playbook } from '../../src/playbook/playbook.js';
import { routesDataFor } from '../../src/render/host-files.js';
import { ROUTES_PROGRAM } from '../../src/script/routes-program.js';

/** Writes DIR/ibfleet-routes (0755) and DIR/routes.conf for `host`; returns the program's path. */
export function writeRoutesProgram(dir: string, playbook: Playbook, host: Host, fleet: Fleet): string {
  mkdirSync(dir, { recursive: true });
  const program = join(dir, 'ibfleet-routes');
  writeFileSync(program, ROUTES_PROGRAM, { mode: 0o755 });
  writeFileSync(join(dir, 'routes.conf'), routesDataFor(playbook, host, fleet));
  return program;
}
