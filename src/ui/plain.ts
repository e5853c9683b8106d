/**
 * Plain lines for pipes, logs and CI (stdout not a TTY): one line per host event, then a summary.
 * Status folds hosts that answered the same into one line, ClusterShell-style. What a host sent
 * back (error messages, output tails) is sanitised like everywhere else, tabs kept: plain output
 * may well be a terminal too. Each message and each line of an output tail is cut at a few KiB
 * (src/host-text.ts, clipHostText): the run log has the whole text.
 */
import { clipHostLines, clipHostText } from '../host-text.js';
import {
  reportsHostState,
  type CommandName,
  type HostResult,
  type MatrixCell,
  type MatrixStart,
  type RunEnd,
  type RunEvents,
  type RunStart,
} from '../vocabulary.js';
import {
  causeGroups,
  formatCauseGroupText,
  formatMatrixStartText,
  formatRailsText,
  notRunForUnreachable,
  unreachableCellLines,
} from './text/matrix-summary.js';
import { summarizeChanges } from './text/changes.js';
import { formatDiffLines } from './text/diffs.js';
import { foldedFabricLines, foldedWarningLines } from './text/fabric.js';
import { foldResults } from './text/fold.js';
import { statusGroups } from './text/status-fold.js';
import { formatPlanLines } from './text/plan.js';
import { fleetProblems, formatCounts, formatDuration, STAGE_NOTES } from './text/format.js';
import { runHeading, runHeadingParts } from './text/header.js';
import { sanitizeLine, sanitizeLines } from './text/sanitize.js';
import type { OutStream } from './stream.js';

export interface PlainOptions {
  readonly command: CommandName;
  /** Print every stage as it starts (deploy, rollback); status and verify print results only. */
  readonly stages: boolean;
}

function label(host: { id: number; name: string }): string {
  return `[${host.id} ${host.name}]`;
}

function indent(text: string, prefix = '    | '): string {
  return sanitizeLines(text, 'keep')
    .map((l) => `${prefix}${l}`)
    .join('\n');
}

/** `ibfleet deploy: 3 hosts (16,34,40) · playbook P · inventory I · concurrency 32`. */
export function plainHeaderLine(start: RunStart): string {
  const { title, details } = runHeadingParts(runHeading(start));
  return `${title}: ${details.join(' · ')}`;
}

export function plainHandler(out: OutStream, options: PlainOptions): RunEvents {
  const write = (line: string) => void out.write(`${line}\n`);
  let start: RunStart | undefined;
  let matrix: MatrixStart | undefined;
  return {
    onRunStart: (e: RunStart) => {
      start = e;
      write(plainHeaderLine(e));
    },
    onStage: (host, stage) => {
      if (options.stages) write(`${label(host)} ${STAGE_NOTES[stage] ?? stage}`);
    },
    onHostDone: (r) => {
      if (reportsHostState(options.command)) return;
      write(`${label(r.host)} ${outcomeLine(r)}`);
      // What the changes by kind do not say (a connection lost and looked at again, a login banner's note).
      const told = new Set((r.changes ?? []).map((c) => c.text));
      if ((r.status === 'changed' || r.status === 'planned') && told.size > 0)
        for (const note of r.reasons.filter((x) => !told.has(x))) write(`    - ${sanitizeLine(note, 'keep')}`);
      if (r.error?.stderrTail) write(indent(clipHostLines(r.error.stderrTail)));
      if (r.planText && start?.showScripts) {
        write('    script that would run as root on the host:');
        write(indent(r.planText));
      }
    },
    onMatrix: (_cells, announced) => {
      matrix = announced;
      const line = formatMatrixStartText(announced);
      if (line) write(line);
    },
    // Cells an unreachable host kept from running are folded at the end: one line, not one per cell.
    onCell: (cell: MatrixCell) => void (notRunForUnreachable(cell) ? undefined : write(cellLine(cell))),
    onRunEnd: (e: RunEnd) => {
      if (reportsHostState(options.command)) {
        for (const line of foldedStatusLines(e.results, start?.inventory)) write(line);
        for (const line of foldedFabricLines(e.results)) write(`fabric ${sanitizeLine(line)}`);
      }
      // Lines came in finishing order; the recap is in host order, hosts alike folded.
      else if ((options.command === 'deploy' || options.command === 'rollback') && e.results.length > 1)
        for (const line of foldedOutcomeLines(e.results)) write(line);
      for (const line of e.problems ?? []) write(`problem ${sanitizeLine(line)}`);
      for (const line of foldedWarningLines(e.results, e.warnings)) write(`warning ${sanitizeLine(line)}`);
      if (start?.diff) for (const line of formatDiffLines(e.results)) write(line);
      if (start?.dryRun)
        for (const line of formatPlanLines(e.results, {
          scriptsHint: start.showScripts ? undefined : 'the exact scripts: --show-scripts',
        }))
          write(line);
      for (const line of unreachableCellLines(e.cells)) write(line);
      const failedCells = e.cells.filter((c) => c.state === 'failed');
      for (const c of failedCells)
        write(`  reproduce ${c.from.name}/${c.from.iface} → ${c.to.name}/${c.to.iface}: ${c.reproduce}`);
      for (const line of matrixSummaryLines(e.cells, matrix, start?.inventory)) write(line);
      write(
        `summary: ${formatCounts(e.results)}${matrixCounts(e.cells)}${e.problems?.length ? ` · ${fleetProblems(e.problems.length)}` : ''} · ${formatDuration(e.durationMs)}${e.interrupted ? ' · interrupted' : ''}`,
      );
    },
  };
}

/**
 * After the cells: how each rail did (hosts of several NICs), the failing cells folded by their
 * likely cause, and again which matrix ran when verify chose it (the first line has scrolled away).
 */
function matrixSummaryLines(
  cells: readonly MatrixCell[],
  start: MatrixStart | undefined,
  inventory: string | undefined,
): string[] {
  if (cells.length === 0) return [];
  const rails = formatRailsText(cells);
  const groups = causeGroups(cells);
  return [
    ...(rails ? [rails] : []),
    ...(groups.length > 0
      ? ['failing cells by likely cause:', ...groups.map((g) => `  - ${formatCauseGroupText(g, inventory)}`)]
      : []),
    ...(start?.reason ? [formatMatrixStartText(start)!] : []),
  ];
}

/** ` · matrix 20/24 passed, 2 skipped, 2 not run`, or '' without a matrix. */
function matrixCounts(cells: readonly MatrixCell[]): string {
  if (cells.length === 0) return '';
  const count = (state: MatrixCell['state']) => cells.filter((c) => c.state === state).length;
  const extra = (['failed', 'skipped', 'not-run'] as const)
    .filter((s) => count(s) > 0 && s !== 'failed')
    .map((s) => `${count(s)} ${s === 'not-run' ? 'not run' : s}`);
  return ` · matrix ${count('passed')}/${cells.length} passed${extra.length ? `, ${extra.join(', ')}` : ''}`;
}

/** One line saying how a host ended. */
export function outcomeLine(r: HostResult): string {
  const meta = [r.manager, formatDuration(r.durationMs)].filter(Boolean).join(', ');
  switch (r.status) {
    case 'failed':
    case 'unreachable':
      return `${r.status} at ${r.error?.stage ?? 'connect'} (${meta}): ${sanitizeLine(clipHostText(r.error?.message ?? r.reasons[0] ?? ''), 'keep')}`;
    case 'drift':
      return `drift (${meta}): ${sanitizeLine(clipHostText(r.reasons.join('; ')), 'keep')}`;
    case 'changed':
    case 'planned':
      return `${r.status} (${meta}): ${changesText(r)}`;
    case 'not-run':
      return `not run (${meta}): ${sanitizeLine(r.reasons.join('; '), 'keep')}`;
    default:
      return `${r.status} (${meta})`;
  }
}

/** What a host changed, by kind; a result without kinds (an older caller) says how many. */
function changesText(r: HostResult): string {
  if (r.changes && r.changes.length > 0) return summarizeChanges(r.changes);
  return `${r.reasons.length} change${r.reasons.length === 1 ? '' : 's'}`;
}

const CELL_MARK: Readonly<Record<MatrixCell['state'], string>> = {
  passed: 'ok  ',
  failed: 'FAIL',
  skipped: 'skip',
  'not-run': 'not run',
};

export function cellLine(c: MatrixCell): string {
  const mark = CELL_MARK[c.state];
  return `${mark} ${c.method} ${c.from.host}/${c.from.iface} (${c.from.ip}) → ${c.to.host}/${c.to.iface} (${c.to.ip}): ${sanitizeLine(c.detail, 'keep')}`;
}

/** deploy and rollback's recap: hosts with the same outcome and the same changes by kind on one line. */
export function foldedOutcomeLines(results: readonly HostResult[]): string[] {
  const groups = foldResults(
    results.map((r) => ({
      id: r.host.id,
      status: r.status,
      reasons: [
        r.status === 'failed' || r.status === 'unreachable'
          ? `${r.error?.stage ?? 'connect'}: ${r.error?.message ?? ''}`
          : r.changes?.length
            ? summarizeChanges(r.changes)
            : r.reasons.join('; '),
      ]
        .map((x) => sanitizeLine(clipHostText(x), 'keep'))
        .filter((x) => x !== ''),
    })),
  );
  return groups.map(
    (g) => `${g.hostSet}: ${g.status === 'not-run' ? 'not run' : g.status}${g.reasons[0] ? `: ${g.reasons[0]}` : ''}`,
  );
}

/**
 * Hosts with the same status and reasons become one line (`16,34: ok`), what needs attention first;
 * hosts never deployed one line per manager with the deploy command (status-fold.ts).
 */
export function foldedStatusLines(results: readonly HostResult[], inventory?: string): string[] {
  const groups = statusGroups(results, inventory, (r) =>
    (r.status === 'unreachable' || r.status === 'failed' ? [r.error?.message ?? ''] : r.reasons).map((reason) =>
      sanitizeLine(clipHostText(reason), 'keep'),
    ),
  );
  const lines: string[] = [];
  for (const g of groups) {
    if (g.summary !== undefined) lines.push(`${g.hostSet}: ${sanitizeLine(g.summary, 'keep')}`);
    else if (g.reasons.length <= 1) lines.push(`${g.hostSet}: ${g.status}${g.reasons[0] ? `: ${g.reasons[0]}` : ''}`);
    else {
      lines.push(`${g.hostSet}: ${g.status}:`);
      for (const reason of g.reasons) lines.push(`    - ${reason}`);
    }
  }
  return lines;
}
