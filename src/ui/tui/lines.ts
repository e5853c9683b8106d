/**
 * Pure formatters for every line the TUI draws (`formatXText(model)`, Shopify CLI style): the
 * components only add colour. Tests and the render-cost script read these directly.
 */
import { STAGES, type HostStatus } from '../../vocabulary.js';
import { foldHosts } from '../../inventory/select.js';
import type { HostGroup } from '../text/fold.js';
import {
  fleetProblems,
  formatDuration,
  padEnd,
  padStart,
  pluralize,
  STAGE_NOTES,
  stageLabel,
  STATUS_ORDER,
  countWords,
  notDeployedCount,
} from '../text/format.js';
import { runHeadingParts } from '../text/header.js';
import { MANAGER_WIDTH, STATUS_LOOK, STATUS_WIDTH, type Tone } from './format.js';
import { spinnerGlyph } from './spinner.js';
import type { MatrixModel } from './matrix.js';
import type { FinishedHost } from './finished-host.js';
import type { HeaderModel, RowLayout, RunningHost, RunState } from './state.js';
import { runSucceeded, waitingCount } from './state.js';

export function formatHeaderText(header: HeaderModel): string {
  const { title, details } = runHeadingParts(header);
  return [title, ...details, ...(header.dryRun ? ['dry run: nothing is changed'] : [])].join(' · ');
}

const DURATION_WIDTH = 6;

/** `16 cpuserver16`, padded so that every row's columns line up. */
export function formatHostColumns(id: number, name: string, layout: RowLayout): string {
  return `${padStart(String(id), layout.idWidth)} ${padEnd(name, layout.nameWidth)}`;
}

export interface RowParts {
  readonly symbol: string;
  readonly tone: Tone;
  /** Host number and name, padded. */
  readonly host: string;
  /** Status word (finished) or stage (running), padded. */
  readonly status: string;
  /** Manager and duration (finished) or elapsed time (running), padded. */
  readonly meta: string;
  readonly reason: string;
}

/** A finished host: `✓  16 cpuserver16  changed      networkmanager    4.2s  reason`. */
export function finishedRowParts(row: FinishedHost, layout: RowLayout): RowParts {
  const look = STATUS_LOOK[row.status];
  return {
    symbol: look.symbol,
    tone: look.tone,
    host: formatHostColumns(row.host.id, row.host.name, layout),
    status: padEnd(row.status, STATUS_WIDTH),
    meta: `${padEnd(row.manager ?? '', MANAGER_WIDTH)}  ${padStart(formatDuration(row.durationMs), DURATION_WIDTH)}`,
    reason: row.reason,
  };
}

/** A running host, in the same columns as a finished one: its stage where the status goes, then elapsed. */
export function runningRowParts(host: RunningHost, now: number, frame: number, layout: RowLayout): RowParts {
  return {
    symbol: spinnerGlyph(frame),
    tone: 'info',
    host: formatHostColumns(host.host.id, host.host.name, layout),
    status: padEnd(stageLabel(host.stage), STATUS_WIDTH),
    meta: padStart(formatDuration(now - host.startedAt), DURATION_WIDTH),
    reason: host.stage === undefined ? '' : (STAGE_NOTES[host.stage] ?? ''),
  };
}

export function joinRowParts(parts: RowParts): string {
  return `${parts.symbol} ${parts.host}  ${parts.status}  ${parts.meta}${parts.reason ? `  ${parts.reason}` : ''}`.trimEnd();
}

/** Indent of the lines under a row (error tail, plan), aligned with the host name. */
export function detailIndent(layout: RowLayout): string {
  return ' '.repeat(2 + layout.idWidth + 1);
}

/** `connect 5, probe 5, push 4`: in stage order, so the line reads like the pipeline. */
export function formatStageCounts(hosts: readonly RunningHost[]): string {
  const counts = new Map<string, number>();
  for (const h of hosts) counts.set(stageLabel(h.stage), (counts.get(stageLabel(h.stage)) ?? 0) + 1);
  const order = ['starting', ...STAGES] as readonly string[];
  return [...counts]
    .sort(([a], [b]) => order.indexOf(a) - order.indexOf(b))
    .map(([stage, n]) => `${stage} ${n}`)
    .join(', ');
}

/** `interrupted  34 (probe 1)`: who was cut off, and in which stage. */
export function formatInterruptedText(hosts: readonly RunningHost[]): string {
  return `${padEnd('interrupted', STATUS_WIDTH)}  ${foldHosts(hosts.map((h) => h.host.id))} (${formatStageCounts(hosts)})`;
}

export function formatMoreRunningText(hidden: readonly RunningHost[]): string {
  return `${hidden.length} more running (${formatStageCounts(hidden)})`;
}

/** Compact mode: the successes that are counted rather than listed. */
export function formatProgressText(state: RunState): string | undefined {
  const counted = STATUS_ORDER.filter((s) => !['failed', 'unreachable', 'drift'].includes(s)).filter(
    (s) => state.counts[s] > 0,
  );
  const total = counted.reduce((sum, s) => sum + state.counts[s], 0);
  if (total === 0) return undefined;
  return `${total} more finished: ${counted.map((s) => `${state.counts[s]} ${s}`).join(', ')}`;
}

export function formatFailingText(
  sets: readonly { readonly status: HostStatus; readonly hostSet: string; readonly count: number }[],
): string {
  return sets.map((s) => `${s.status} ${s.hostSet}`).join('; ');
}

/** A status group: `ok           16-20,34 (6 hosts)` — the host set is the answer, shown whole. */
export function formatGroupText(group: HostGroup): string {
  const count = group.ids.length > 1 ? ` (${group.ids.length} hosts)` : '';
  return `${padEnd(group.status, STATUS_WIDTH)}  ${group.hostSet}${count}`;
}

/**
 * Folded successes of a large run: `changed      203 hosts: 1-3,5-7,…` on one line (the count
 * first, so truncating a long interleaved set loses nothing that matters; --json has every host).
 */
export function formatCountedGroupText(group: HostGroup): string {
  return `${padEnd(group.status, STATUS_WIDTH)}  ${pluralize(group.ids.length, 'host')}: ${group.hostSet}`;
}

export function formatMatrixCountsText(matrix: MatrixModel): string {
  const total = Object.values(matrix.counts).reduce((sum, n) => sum + n, 0);
  const mode = matrix.start && matrix.start.mode !== 'full' ? ` (${matrix.start.mode})` : '';
  return `matrix${mode} ${matrix.ends.length}x${matrix.ends.length} NICs, ${pluralize(total, 'cell')}: ${formatCellCounts(matrix)}`;
}

function formatCellCounts(matrix: MatrixModel): string {
  const { passed, failed, skipped, pending } = matrix.counts;
  const parts = [`${passed} passed`, `${failed} failed`];
  if (skipped > 0) parts.push(`${skipped} skipped`);
  if (matrix.counts['not-run'] > 0) parts.push(`${matrix.counts['not-run']} not run`);
  if (pending > 0) parts.push(`${pending} pending`);
  return parts.join(', ');
}

/** `host × host: ✓ all 4 NIC pairs passed  3 = 3 of 4 passed  ✗ none  · pending · method ping`. */
export function formatHostLegendText(matrix: MatrixModel, perPair: number): string {
  const marks = ['✓ all passed', '3 = 3 passed', '✗ none'];
  if (matrix.counts.pending > 0) marks.push('· pending');
  if (matrix.counts.skipped > 0) marks.push('– skipped');
  if (matrix.counts['not-run'] > 0) marks.push('○ not run');
  return `host×host, ${perPair} cells each: ${marks.join('  ')} · ${matrix.methods.join(', ') || '-'}`;
}

/** `NIC×NIC over host pairs (≤6 cells each; rails on the diagonal): ✓ all passed  3 = 3 passed  ✗ none`. */
export function formatRailLegendText(matrix: MatrixModel, perPair: number): string {
  const marks = ['✓ all passed', '3 = 3 passed', '✗ none'];
  if (matrix.counts.pending > 0) marks.push('· pending');
  if (matrix.counts['not-run'] > 0) marks.push('○ not run');
  return `NIC×NIC over host pairs (≤${perPair} cells each; rails on the diagonal): ${marks.join('  ')}`;
}

export function formatLegendText(matrix: MatrixModel): string {
  return `rows: from, columns: to · ✓ reachable  ✗ failed  · pending  – skipped${matrix.counts['not-run'] > 0 ? '  ○ not run' : ''} · method ${matrix.methods.join(', ') || '-'}`;
}

export interface SummaryText {
  readonly symbol: string;
  readonly ok: boolean | undefined;
  readonly text: string;
}

/**
 * The last line, always visible: counts and total time. `ok` is undefined while running.
 * Live lines keep their text ASCII and their glyph apart (see LiveLine): Ink measures every
 * live line on every frame, and string-width has a fast path for ASCII only.
 */
export function formatSummary(state: RunState, now: number): SummaryText {
  if (!state.header) return { symbol: '·', ok: undefined, text: `${state.command}: starting` };
  const counts = countWords(
    new Map(STATUS_ORDER.map((s) => [s, state.counts[s]])),
    state.end ? notDeployedCount(state.results) : 0,
  );
  const cells = state.matrix ? [`cells ${formatCellCounts(state.matrix)}`] : [];
  if (!state.end) {
    const live = [...counts];
    if (state.running.size > 0) live.push(`${state.running.size} running`);
    const waiting = waitingCount(state);
    if (waiting > 0) live.push(`${waiting} waiting`);
    // Elapsed first: the line is truncated at the terminal's width, and time is what one looks for.
    const elapsed = formatDuration(now - (state.startedAt ?? now));
    return {
      symbol: '·',
      ok: undefined,
      text: `${state.command} ${elapsed}: ${[`${state.finished.length}/${state.hosts.length} done`, ...live, ...cells].join(', ')}`,
    };
  }
  const ok = runSucceeded(state);
  const time = formatDuration(state.end.durationMs);
  const finished = new Set(state.finished.map((f) => f.host.id));
  const unfinished = state.hosts.map((h) => h.id).filter((id) => !finished.has(id));
  const tail = unfinished.length > 0 ? [`${unfinished.length} not finished (${foldHosts(unfinished)})`] : [];
  const verb = state.end.interrupted ? `interrupted after ${time}` : `finished in ${time}`;
  const problems = state.end.problems ? [fleetProblems(state.end.problems)] : [];
  const all = [...counts, ...tail, ...cells, ...problems];
  return { symbol: ok ? '✓' : '✗', ok, text: `${state.command} ${verb}${all.length > 0 ? `: ${all.join(', ')}` : ''}` };
}
