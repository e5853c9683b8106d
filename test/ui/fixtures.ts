/** Builders for runner events, so each test states only what matters to it. */
import type { CellEnd, HostRef, HostResult, HostStatus, MatrixCell, RunStart } from '../../src/vocabulary.js';
import { initialRunState, reduceRun, type RunAction, type RunState } from '../../src/ui/tui/state.js';

/** A fixed epoch for every test clock: 2025-01-01T12:00:00Z. */
export const T0 = Date.UTC(2025, 0, 1, 12, 0, 0);

export function host(id: number, name = `host${id}`, ifaces?: readonly string[]): HostRef {
  return {
    id,
    name,
    target: `10.208.130.${id}`,
    ...(ifaces ? { nics: ifaces.map((iface, i) => ({ index: i + 1, iface, address: `172.16.${id}.${i + 1}` })) } : {}),
  };
}

export const cpu16 = host(16, 'cpuserver16');
export const mem34 = host(34, 'memserver34');

export function runStart(hosts: readonly HostRef[], over: Partial<RunStart> = {}): RunStart {
  return {
    command: 'deploy',
    hosts,
    concurrency: 32,
    inventory: 'inventory/fleet.yaml',
    playbook: 'playbooks/dual-ib-routing.yaml',
    startedAt: T0,
    ...over,
  };
}

export function result(h: HostRef, status: HostStatus, over: Partial<HostResult> = {}): HostResult {
  return { host: h, status, durationMs: 4200, reasons: [], ...over };
}

export function start(
  command: RunStart['command'],
  hosts: readonly HostRef[],
  over: Partial<RunStart> = {},
): RunAction {
  return { type: 'runStart', event: runStart(hosts, { command, ...over }) };
}

export function fold(
  actions: readonly RunAction[],
  options: { command?: RunStart['command']; rows?: number } = {},
): RunState {
  return reduceRun(
    initialRunState({ command: options.command ?? 'deploy', terminalRows: options.rows ?? 24 }),
    actions,
  );
}

export function nic(h: HostRef, n: number, iface: string): CellEnd {
  return { host: h.id, name: h.name, nic: n, iface, ip: `172.16.${h.id}.${n}` };
}

/** 2 hosts × 2 NICs as in the seeds: 16 has ibs5f0/ibs5f1, 34 has ib0/ib1. */
export const NICS: readonly CellEnd[] = [
  nic(cpu16, 1, 'ibs5f0'),
  nic(cpu16, 2, 'ibs5f1'),
  nic(mem34, 1, 'ib0'),
  nic(mem34, 2, 'ib1'),
];

/** Every ordered pair of distinct NICs (a NIC is not pinged from itself). */
export function allPairs(method: MatrixCell['method'] = 'ping'): Pick<MatrixCell, 'from' | 'to' | 'method'>[] {
  return NICS.flatMap((from) => NICS.filter((to) => to !== from).map((to) => ({ from, to, method })));
}

export function cell(from: CellEnd, to: CellEnd, ok: boolean | null, over: Partial<MatrixCell> = {}): MatrixCell {
  const method = over.method ?? 'ping';
  return {
    from,
    to,
    method,
    ok,
    state: ok === true ? 'passed' : ok === false ? 'failed' : 'skipped',
    detail: ok === true ? '3/3 replies' : ok === false ? '0/3 replies' : 'skipped: no RDMA device',
    reproduce: `ssh root@10.208.130.${from.host} ping -c 3 -I ${from.ip} ${to.ip}`,
    ...over,
  };
}

const ANSI = /\u001b\[[0-9;?]*[ -/]*[@-~]/g;

/** A frame as a person reads it: no escape codes, no trailing blanks, durations kept (the clock is injected). */
export function plain(frame: string | undefined): string {
  return (frame ?? '')
    .replace(ANSI, '')
    .split('\n')
    .map((l) => l.trimEnd())
    .join('\n')
    .replace(/\n+$/, '');
}

/** For frames taken with a real clock: every `12.3s` becomes `#.#s`. */
export function normaliseDurations(text: string): string {
  return text.replace(/\b\d+(\.\d)?s\b|\b\d+m\d\ds\b/g, '#.#s');
}
