/**
 * The small words every display uses the same way — plain lines, the TUI, --json and onboard's
 * output: durations, the order outcomes are listed in, counts, padding. Pure.
 */
import type { CellEnd, HostResult, HostStatus, Stage } from '../../vocabulary.js';

/** `0.4s`, `12.3s`, `1m05s`, `1h02m` — one decimal under a minute, where it matters most. */
export function formatDuration(ms: number): string {
  const safe = Number.isFinite(ms) && ms > 0 ? ms : 0;
  const tenths = Math.floor(safe / 100);
  if (tenths < 600) return `${(tenths / 10).toFixed(1)}s`;
  const seconds = Math.floor(safe / 1000);
  if (seconds < 3600) return `${Math.floor(seconds / 60)}m${String(seconds % 60).padStart(2, '0')}s`;
  return `${Math.floor(seconds / 3600)}h${String(Math.floor(seconds / 60) % 60).padStart(2, '0')}m`;
}

/** The order outcomes are counted and listed in: what needs attention first. */
export const STATUS_ORDER: readonly HostStatus[] = [
  'failed',
  'unreachable',
  'drift',
  'not-run',
  'planned',
  'changed',
  'unchanged',
  'ok',
];

export function countStatuses(results: readonly Pick<HostResult, 'status'>[]): Map<HostStatus, number> {
  const counts = new Map<HostStatus, number>();
  for (const r of results) counts.set(r.status, (counts.get(r.status) ?? 0) + 1);
  return counts;
}

/** `1 failed, 3 changed`: in STATUS_ORDER. */
export function formatCounts(results: readonly Pick<HostResult, 'status'>[]): string {
  const counts = countStatuses(results);
  return (
    STATUS_ORDER.filter((s) => counts.has(s))
      .map((s) => `${counts.get(s)} ${s}`)
      .join(', ') || 'no hosts'
  );
}

export function pluralize(count: number, one: string, many = `${one}s`): string {
  return `${count} ${count === 1 ? one : many}`;
}

export function stageLabel(stage: Stage | undefined): string {
  return stage ?? 'starting';
}

/** What a stage means to a reader where its name alone would not say it. */
export const STAGE_NOTES: Readonly<Partial<Record<Stage, string>>> = {
  wait: 'waiting for another ibfleet run (the host lock)',
};

/** `16/ibs5f0`: host number and interface, how a NIC is named in the matrix. */
export function endLabel(end: Pick<CellEnd, 'host' | 'iface'>): string {
  return `${end.host}/${end.iface}`;
}

export function padEnd(text: string, width: number): string {
  return text.length >= width ? text : text + ' '.repeat(width - text.length);
}

export function padStart(text: string, width: number): string {
  return text.length >= width ? text : ' '.repeat(width - text.length) + text;
}

/** `1 fleet problem`: what the hosts together cannot do, said in the summary beside the counts. */
export function fleetProblems(n: number): string {
  return `${n} fleet problem${n === 1 ? '' : 's'}`;
}
