/**
 * The connectivity matrix: which (source host/NIC → destination host/NIC) cells to check, and what
 * their tools' output means; the commands themselves are built in src/render/verify-commands.ts. Pure.
 */
import type { Host } from '../inventory/model.js';
import { reproduceCommand, RPING_COUNT } from '../render/verify-commands.js';
import type { CellEnd, CellMethod, CellSpec, CellState, HostResult, MatrixCell, MatrixMode } from '../vocabulary.js';

/**
 * Which NIC pairs verify checks. full: every NIC of every host to every NIC of every other host.
 * ring: each host to the next (wrapping around), every NIC pair between them. rail: NIC n of every
 * host to NIC n of every other host — what rail-aligned collective traffic (NCCL's rings and trees
 * on a rail-optimised fabric) uses.
 */
export type { MatrixMode } from '../vocabulary.js';
export const MATRIX_MODES: readonly MatrixMode[] = ['full', 'rail', 'ring'];

/** off: ping only; auto: rping where both ends have RDMA and rping; on: rping for every pair. */
export type RpingMode = 'off' | 'auto' | 'on';

function ends(host: Host): CellEnd[] {
  return host.nics.map((n) => ({ host: host.id, name: host.name, nic: n.index, iface: n.iface, ip: n.address }));
}

/** Ordered host pairs: every pair (full, rail) or each host to the next, wrapping around (ring). */
export function hostPairs(hosts: readonly Host[], mode: MatrixMode): [Host, Host][] {
  const sorted = [...hosts].sort((a, b) => a.id - b.id);
  if (sorted.length < 2) return [];
  if (mode === 'ring') {
    const pairs = sorted.map((h, i): [Host, Host] => [h, sorted[(i + 1) % sorted.length]!]);
    return pairs;
  }
  return sorted.flatMap((a) => sorted.filter((b) => b !== a).map((b): [Host, Host] => [a, b]));
}

/** The NIC pairs between two hosts: all of them, or on a rail only NIC n and NIC n (where both hosts have it). */
function nicPairs(a: Host, b: Host, mode: MatrixMode): [CellEnd, CellEnd][] {
  const [from, to] = [ends(a), ends(b)];
  if (mode === 'rail')
    return from.flatMap((f) => to.filter((t) => t.nic === f.nic).map((t): [CellEnd, CellEnd] => [f, t]));
  return from.flatMap((f) => to.map((t): [CellEnd, CellEnd] => [f, t]));
}

export function matrixCells(hosts: readonly Host[], mode: MatrixMode, methods: readonly CellMethod[]): CellSpec[] {
  const cells: CellSpec[] = [];
  for (const method of methods) {
    for (const [a, b] of hostPairs(hosts, mode)) {
      for (const [from, to] of nicPairs(a, b, mode)) cells.push({ from, to, method });
    }
  }
  return cells;
}

/** How many NIC pairs nicPairs gives, counted rather than built (a full matrix may have 600 000). */
function nicPairCount(a: Host, b: Host, mode: MatrixMode): number {
  return mode === 'rail' ? Math.min(a.nics.length, b.nics.length) : a.nics.length * b.nics.length;
}

/** Cells of one method in a mode: in all, and from the host that checks the most (its share of the work). */
export function matrixSize(hosts: readonly Host[], mode: MatrixMode): { cells: number; perHost: number } {
  const counts = new Map<number, number>();
  for (const [a, b] of hostPairs(hosts, mode)) counts.set(a.id, (counts.get(a.id) ?? 0) + nicPairCount(a, b, mode));
  return { cells: [...counts.values()].reduce((sum, n) => sum + n, 0), perHost: Math.max(0, ...counts.values()) };
}

/**
 * The most a host checks when verify is given no mode: 8 192 cells — 24 576 echoes, which the
 * python3 prober sends at its pace of 20 000 a second in about 4 s of a host's time (6 000 cells
 * answered in 0.5 s on loopback). Every dual-NIC fleet up to 254 hosts fits its full matrix
 * (253 × 4 = 1 012 a host), and so do 100 GPU nodes of 8 NICs (99 × 64 = 6 336 a host, 633 600 in
 * all: on real hosts each sends its own; a lab on one 2-core machine takes minutes for it); 254 of
 * them get the rails (253 × 8 = 2 024 a host; the full matrix would be 16 192).
 */
export const DEFAULT_CELLS_PER_HOST = 8192;

export interface MatrixChoice {
  readonly mode: MatrixMode;
  /** Why this mode when none was asked for, with the size of what was left out; undefined when asked for. */
  readonly reason?: string;
}

/**
 * The mode verify checks without --full, --rail or --ring: the most thorough one whose work per host
 * fits DEFAULT_CELLS_PER_HOST — the full matrix, else the rails (hosts of several NICs), else the
 * ring, which is always small (NICs² a host) and still sends from and to every NIC of every host.
 */
export function chooseMatrixMode(
  hosts: readonly Host[],
  asked: MatrixMode | undefined,
  budget = DEFAULT_CELLS_PER_HOST,
): MatrixChoice {
  if (asked) return { mode: asked };
  if (matrixSize(hosts, 'full').perHost <= budget) return { mode: 'full' };
  const size = (mode: MatrixMode) =>
    `${matrixSize(hosts, mode).cells} cells, up to ${matrixSize(hosts, mode).perHost} a host`;
  const multiNic = hosts.some((h) => h.nics.length > 1);
  const rail = multiNic ? matrixSize(hosts, 'rail').perHost : Number.POSITIVE_INFINITY;
  const mode: MatrixMode = rail <= budget ? 'rail' : 'ring';
  const left =
    mode === 'ring' && multiNic
      ? `the full matrix (${size('full')}) and the rails (${size('rail')}) are`
      : `the full matrix (${size('full')}) is`;
  return {
    mode,
    reason: `${left} more than ${budget} cells a host: ${mode === 'ring' && multiNic ? '--full or --rail checks them' : '--full checks it'}`,
  };
}

/** The cells to check: ping for every pair, and rping as `rping` says (`canRping`: the host has RDMA and rping). */
export function chooseCells(
  hosts: readonly Host[],
  mode: MatrixMode,
  rping: RpingMode,
  canRping: (host: number) => boolean,
): CellSpec[] {
  const ping = matrixCells(hosts, mode, ['ping']);
  if (rping === 'off') return ping;
  const rpings = matrixCells(hosts, mode, ['rping']);
  if (rping === 'on') return [...ping, ...rpings];
  return [...ping, ...rpings.filter((c) => canRping(c.from.host) && canRping(c.to.host))];
}

/**
 * Which host a failed cell is charged to: the hosts its causes name (a port down at the
 * destination fails the destination, not every host that pinged it); a cell nothing explains, its
 * source, which ran the tool that saw it fail.
 */
export function chargedTo(cell: Pick<MatrixCell, 'from' | 'causes'>, host: number): boolean {
  return cell.causes && cell.causes.length > 0 ? cell.causes.some((c) => c.host === host) : cell.from.host === host;
}

/**
 * How a reachable host did in verify: failed when a failed cell is charged to it (chargedTo;
 * skipped cells do not count), the message naming what was found at it; not-run when, without a
 * failure, some of its cells were never checked (interrupted). Cells not run because another host
 * could not be reached are that host's, not this one's.
 */
export function hostVerdict(
  host: Pick<Host, 'id' | 'name'>,
  cells: readonly MatrixCell[],
): Pick<HostResult, 'status' | 'reasons' | 'error'> {
  const mine = cells.filter((cell) => cell.from.host === host.id);
  const involved = cells.filter((cell) => cell.from.host === host.id || cell.to.host === host.id);
  const charged = involved.filter((cell) => cell.state === 'failed' && chargedTo(cell, host.id));
  const notRun = mine.filter((cell) => cell.state === 'not-run' && !cell.causes?.some((c) => c.kind === 'unreachable'));
  const unrun = notRun.length > 0 ? `, ${notRun.length} not run (interrupted)` : '';
  if (charged.length > 0) {
    const found = [
      ...new Set(charged.flatMap((cell) => (cell.causes ?? []).filter((c) => c.host === host.id).map((c) => c.text))),
    ];
    const message =
      found.length > 0
        ? `${charged.length} of ${involved.length} cells through ${host.name} failed${unrun}: ${found.slice(0, 2).join('; ')}${found.length > 2 ? `; and ${found.length - 2} more` : ''}`
        : `${charged.length} of ${mine.length} cells from ${host.name} failed${unrun}`;
    return { status: 'failed', reasons: [message], error: { stage: 'check', message, stderrTail: '' } };
  }
  if (notRun.length > 0) {
    const ran = mine.length - notRun.length;
    return {
      status: 'not-run',
      reasons: [
        `interrupted: ${notRun.length} of ${mine.length} cells from ${host.name} not run${ran > 0 ? `; the ${ran} that ran passed or were skipped` : ''}`,
      ],
    };
  }
  return { status: 'ok', reasons: [] };
}

export interface ToolVerdict {
  readonly ok: boolean;
  readonly detail: string;
}

/**
 * iputils and busybox ping: "3 packets transmitted, 3 received", rtt line, or an error such as
 * "ping: SO_BINDTODEVICE ib1: No such device". A cell passes only when every probe is answered.
 */
export function parsePing(output: string, exitCode: number | null): ToolVerdict {
  const counts = /(\d+) packets transmitted, (\d+) (?:packets )?received/.exec(output);
  const rtt = /(?:rtt|round-trip) min\/avg\/max(?:\/mdev)? = [\d.]+\/([\d.]+)\//.exec(output);
  const error = output
    .split('\n')
    .map((l) => l.trim())
    .find(
      (l) =>
        /^(ping|connect|bind)\b.*:/.test(l) ||
        /unreachable|Cannot assign|No such device|Operation not permitted|Invalid argument/i.test(l),
    );
  if (!counts)
    return {
      ok: false,
      detail: error ?? (output.trim().split('\n').pop() || `ping exited ${exitCode ?? 'on a signal'}`),
    };
  const [sent, got] = [Number(counts[1]), Number(counts[2])];
  const ok = sent > 0 && got === sent && exitCode === 0;
  const detail = `${got}/${sent} replies${rtt ? `, avg ${rtt[1]} ms` : ''}${got < sent && got > 0 ? ` (${sent - got} lost)` : ''}${got === 0 && error ? ` — ${error}` : ''}`;
  return { ok, detail };
}

/**
 * rping (librdmacm examples): a working client prints `ping data: rdma-ping-N: …` per
 * iteration and exits 0; failures print the CM event ("cma event RDMA_CM_EVENT_REJECTED, error 8").
 */
export function parseRping(output: string, exitCode: number | null, expected = RPING_COUNT): ToolVerdict {
  const pings = output.split('\n').filter((l) => /^ping data: rdma-ping-\d+:/.test(l.trim())).length;
  const event = /cma event (RDMA_CM_EVENT_[A-Z_]+), error (-?\d+)/.exec(output);
  if (/No RDMA devices were detected/.test(output)) return { ok: false, detail: 'no RDMA device' };
  if (event) return { ok: false, detail: `${event[1]!.replace('RDMA_CM_EVENT_', '')} (error ${event[2]})` };
  if (exitCode === 124) return { ok: false, detail: `timed out after ${pings} of ${expected} pings` };
  if (exitCode === 0 && pings >= expected) return { ok: true, detail: `${pings}/${expected} rdma pings` };
  const lastError = output
    .split('\n')
    .map((l) => l.trim())
    .filter(Boolean)
    .find((l) => /error|failed|No such|Cannot|refused/i.test(l));
  return { ok: false, detail: lastError ?? `${pings}/${expected} rdma pings, exit ${exitCode ?? 'signal'}` };
}

/**
 * An rping cell from its client's output and, when the client failed, the server's first line if
 * it says the server never listened (a port taken, no RDMA address to bind).
 */
export function rpingCellVerdict(
  client: { output: string; exitCode: number | null } | undefined,
  serverOutput: string | undefined,
): ToolVerdict {
  const verdict = client ? parseRping(client.output, client.exitCode) : { ok: false, detail: 'no client result' };
  if (verdict.ok) return verdict;
  // rping's own failure lines (perror: `rdma_bind_addr: Address already in use`), not its -d chatter.
  const failed = serverOutput
    ?.split('\n')
    .find((l) => /^(rdma_bind_addr|rdma_listen): |Address already in use/.test(l.trim()));
  const serverError = failed ? `; server: ${failed.trim()}` : '';
  return { ok: false, detail: `${verdict.detail}${serverError}` };
}

export function cellKey(cell: Pick<CellSpec, 'from' | 'to' | 'method'>): string {
  return `${cell.method}:${cell.from.host}/${cell.from.nic}>${cell.to.host}/${cell.to.nic}`;
}

/** A cell's result; `notRun`: never checked because the run was interrupted (neither passed nor failed). */
export function finishCell(
  spec: CellSpec,
  verdict: { ok: boolean | null; detail: string; notRun?: boolean },
  port?: number,
): MatrixCell {
  const state: CellState = verdict.notRun
    ? 'not-run'
    : verdict.ok === true
      ? 'passed'
      : verdict.ok === false
        ? 'failed'
        : 'skipped';
  return {
    ...spec,
    ok: verdict.notRun ? null : verdict.ok,
    state,
    detail: verdict.detail,
    reproduce: reproduceCommand(spec, port),
  };
}

/** A cell the run never checked: interrupted before it ran. */
export function notRunCell(spec: CellSpec): MatrixCell {
  return finishCell(spec, { ok: null, detail: 'not run: interrupted', notRun: true });
}
