/**
 * The commands verify runs for a matrix cell, as argument vectors, and the line an operator types
 * to see a cell's result by hand. Pure string builders: the scripts that batch them live in
 * verify-scripts.ts, the reading of their output in src/plan/matrix.ts.
 */
import type { CellEnd, CellSpec } from '../vocabulary.js';
import { shellCommand } from '../script/shell.js';

/**
 * A ping cell: PING_COUNT echoes PING_GAP_MS apart from the cell's source address, passed when every
 * one is answered within PING_WAIT_MS of the last — `ping -c 3 -i 0.2 -W 1 -I ADDR`, whichever
 * prober runs it.
 */
export const PING_COUNT = 3;
export const PING_GAP_MS = 200;
export const PING_WAIT_MS = 1000;
export const RPING_COUNT = 3;
/** rping's own default port (rping(1)); a run numbers its servers upwards from here. */
export const RPING_BASE_PORT = 7174;

export function pingArgv(from: CellEnd, to: CellEnd): string[] {
  // From the address, not the interface: the policy rules choose the route, as they do for RDMA CM.
  return [
    'ping',
    '-n',
    '-c',
    String(PING_COUNT),
    '-i',
    String(PING_GAP_MS / 1000),
    '-W',
    String(PING_WAIT_MS / 1000),
    '-I',
    from.ip,
    to.ip,
  ];
}

/**
 * fping over every destination of one source address (given with -f): -C prints each target's
 * replies (`ADDR : 0.05 0.04 -`); -i 1 sends an echo a millisecond, -r0 never retries a lost one.
 */
export function fpingArgv(source: string): string[] {
  return [
    'fping',
    '-S',
    source,
    '-C',
    String(PING_COUNT),
    '-p',
    String(PING_GAP_MS),
    '-t',
    String(PING_WAIT_MS),
    '-i',
    '1',
    '-r',
    '0',
    '-q',
  ];
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
