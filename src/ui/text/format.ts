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
export function formatCounts(results: readonly Pick<HostResult, 'status' | 'notDeployed'>[]): string {
  const counts = countStatuses(results);
  return countWords(counts, notDeployedCount(results)).join(', ') || 'no hosts';
}

/** Hosts whose drift is that ibfleet never deployed them (status folds them into one `not deployed` line). */
export function notDeployedCount(results: readonly Pick<HostResult, 'status' | 'notDeployed'>[]): number {
  return results.filter((r) => r.status === 'drift' && r.notDeployed === true).length;
}

/**
 * `2 drift, 3 not deployed, 1 ok`: each status's count in STATUS_ORDER, the never-deployed hosts
 * counted apart from the drift — the word their line says, so the summary does not read `5 drift`
 * under `60-64: not deployed`. --json keeps their status `drift` (with `notDeployed: true`).
 */
export function countWords(counts: ReadonlyMap<HostStatus, number>, notDeployed = 0): string[] {
  return STATUS_ORDER.flatMap((s) => {
    const n = (counts.get(s) ?? 0) - (s === 'drift' ? notDeployed : 0);
    const words = n > 0 ? [`${n} ${s}`] : [];
    return s === 'drift' && notDeployed > 0 ? [...words, `${notDeployed} not deployed`] : words;
  });
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
