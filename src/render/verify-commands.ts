/**
 * The commands verify runs for a matrix cell, as argument vectors, and the line an operator types
 * to see a cell's result by hand. Pure string builders: the scripts that batch them live in
 * verify-scripts.ts, the reading of their output in src/plan/matrix.ts.
 */
import type { CellEnd, CellSpec } from '../vocabulary.js';
import { shellCommand } from '../script/shell.js';

export const PING_COUNT = 3;
export const RPING_COUNT = 3;
/** rping's own default port (rping(1)); a run numbers its servers upwards from here. */
export const RPING_BASE_PORT = 7174;

export function pingArgv(from: CellEnd, to: CellEnd): string[] {
  return ['ping', '-n', '-c', String(PING_COUNT), '-i', '0.2', '-W', '1', '-I', from.iface, to.ip];
}

export function rpingServerArgv(to: CellEnd, port: number): string[] {
  return ['rping', '-s', '-a', to.ip, '-p', String(port), '-C', String(RPING_COUNT), '-v'];
}

export function rpingClientArgv(from: CellEnd, to: CellEnd, port: number): string[] {
  return ['rping', '-c', '-I', from.ip, '-a', to.ip, '-p', String(port), '-C', String(RPING_COUNT), '-v'];
}

/** What to type to see a cell's result by hand. */
export function reproduceCommand(cell: CellSpec, port = RPING_BASE_PORT): string {
  if (cell.method === 'ping') return `on ${cell.from.name}: ${shellCommand(pingArgv(cell.from, cell.to))}`;
  return `on ${cell.to.name}: ${shellCommand(rpingServerArgv(cell.to, port))}  then on ${cell.from.name}: ${shellCommand(rpingClientArgv(cell.from, cell.to, port))}`;
}
