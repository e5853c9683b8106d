/**
 * The run log as text: a header saying what ran, one block per host as it finishes (its timings,
 * changes, checks, the script it was sent and what that printed, its error), the matrix's cells,
 * and the outcome. Written for a person reading it after the fact (`less`, `grep '^== host 34'`).
 * Pure: src/ui/run-log-file.ts writes it, bounded and with secrets taken out.
 */
import { VERSION } from '../../version.js';
import type { HostRef, HostResult, MatrixCell, MatrixStart, RunEnd, RunStart, Stage } from '../../vocabulary.js';
import { causeGroups, formatCauseGroupText, formatMatrixStartText, formatRailsText } from './matrix-summary.js';
import { byKind, summarizeChanges } from './changes.js';
import { formatCounts, formatDuration } from './format.js';
import { runHeading, runHeadingParts } from './header.js';
import { UNPRINTABLE } from '../../host-text.js';
import { sanitizeLine } from './sanitize.js';

export interface HostTranscript {
  readonly stages: readonly { readonly stage: Stage; readonly at: number }[];
  /**
   * What was sent to the host and what it printed, labelled (`apply script`, `apply output`);
   * `sameAs`: the host whose block above holds the same text under the same label, written there —
   * but for `except`, when given: the lines (numbered from 1, of `total`) that differ.
   */
  readonly entries: readonly TranscriptEntry[];
}

export interface TranscriptEntry {
  readonly label: string;
  readonly text: string;
  readonly sameAs?: number;
  readonly except?: {
    readonly total: number;
    readonly lines: readonly { readonly n: number; readonly text: string }[];
  };
}

/**
 * What sanitizeLine() would change in a line: a character of UNPRINTABLE (ESC, CR and every other
 * control among them). A text with none but its line breaks is its own sanitised lines, so the
 * scripts a deploy sends (~70 KB, 1 400 lines a host) are quoted without a pass per line.
 */
const CHANGED_BY_SANITIZE = UNPRINTABLE.source.includes('\\u000a-')
  ? new RegExp(UNPRINTABLE.source.replace('\\u000a-', '\\u000b-'))
  : /[^]/;

/**
 * A text's lines behind `prefix`, as one string of several lines: the host block is joined with
 * line breaks anyway, and a script of 1 500 lines quoted as one replace costs a copy, not 1 500
 * strings, an array and a join.
 */
const quote = (text: string, prefix = '  | '): string => {
  const body = text.endsWith('\n') ? text.slice(0, -1) : text;
  const clean = CHANGED_BY_SANITIZE.test(text)
    ? body
        .split('\n')
        .map((l) => sanitizeLine(l, 'keep'))
        .join('\n')
    : body;
  return `${prefix}${clean.replaceAll('\n', `\n${prefix}`)}`;
};

export function runLogHeader(start: RunStart, when: Date): string[] {
  const { title, details } = runHeadingParts(runHeading(start));
  // The inventory and playbook paths are the user's, but a path may hold any character too.
  return [
    `# ${title}`,
    `# ibfleet ${VERSION} · ${when.toISOString()}`,
    ...details.map((d) => `# ${sanitizeLine(d, 'keep')}`),
    '',
  ];
}

function timings(
  host: HostRef,
  startedAt: number | undefined,
  transcript: HostTranscript | undefined,
  result: HostResult,
): string {
  const stages = transcript?.stages ?? [];
  const zero = startedAt ?? stages[0]?.at;
  if (zero === undefined || stages.length === 0) return `timings: ${formatDuration(result.durationMs)} in all`;
  const seconds = (at: number) => `+${((at - zero) / 1000).toFixed(2)}s`;
  return `timings: ${stages.map((s) => `${s.stage} ${seconds(s.at)}`).join(', ')}, done after ${formatDuration(result.durationMs)}`;
}

/** One host's block, written when it finishes: its lines (a quoted script or output is one element of many lines). */
export function runLogHostBlock(
  result: HostResult,
  transcript: HostTranscript | undefined,
  startedAt: number | undefined,
): string[] {
  const h = result.host;
  const about = [result.status, result.manager, result.os].filter(Boolean).join(' · ');
  // `about` holds the OS name the host reports: shown through the one sanitiser, as every host text is.
  const lines = [
    sanitizeLine(`== host ${h.id} ${h.name} (${h.target}) · ${about}`, 'keep'),
    timings(h, startedAt, transcript, result),
  ];
  if (result.prober) lines.push(`prober: ${result.prober}`);
  if (result.error) {
    lines.push(
      `error at ${result.error.stage}${result.error.exitCode !== undefined ? ` (exit ${result.error.exitCode})` : ''}: ${sanitizeLine(result.error.message, 'keep')}`,
    );
    if (result.error.stderrTail.trim() !== '') lines.push(quote(result.error.stderrTail));
  }
  const changes = result.changes ?? [];
  if (changes.length > 0) {
    lines.push(`changes (${summarizeChanges(changes)}):`);
    for (const c of byKind(changes)) lines.push(`  ${c.kind} ${c.action}: ${sanitizeLine(c.text, 'keep')}`);
  }
  const told = new Set(changes.map((c) => c.text));
  const notes = result.reasons.filter((r) => !told.has(r) && r !== result.error?.message);
  if (notes.length > 0) lines.push('notes:', ...notes.map((n) => `  ${sanitizeLine(n, 'keep')}`));
  if (result.checks && result.checks.length > 0) {
    lines.push(`checks (${result.checks.filter((c) => c.ok).length}/${result.checks.length} hold):`);
    for (const c of result.checks) lines.push(`  ${c.ok ? 'ok  ' : 'FAIL'} ${sanitizeLine(c.detail, 'keep')}`);
  }
  for (const entry of transcript?.entries ?? []) {
    if (entry.sameAs !== undefined && entry.except)
      lines.push(
        `${entry.label}: host ${entry.sameAs}'s, above, but for ${entry.except.lines.length} of its ${entry.except.total} lines:`,
        ...entry.except.lines.map((l) => `  ${String(l.n).padStart(4)}| ${sanitizeLine(l.text, 'keep')}`),
      );
    else if (entry.sameAs !== undefined) lines.push(`${entry.label}: the same as host ${entry.sameAs}'s, above`);
    else lines.push(`${entry.label}:`, entry.text.trim() === '' ? '  (nothing)' : quote(entry.text));
  }
  if (result.connections !== undefined)
    lines.push(`ssh: ${result.connections} connection(s), ${result.channels ?? 0} channel(s)`);
  lines.push('');
  return lines;
}

const CELL_WORD: Readonly<Record<MatrixCell['state'], string>> = {
  passed: 'ok     ',
  failed: 'FAILED ',
  skipped: 'skipped',
  'not-run': 'not run',
};

export function runLogCellLine(c: MatrixCell): string {
  return `${CELL_WORD[c.state]} ${c.method} ${c.from.host}/${c.from.iface} (${c.from.ip}) → ${c.to.host}/${c.to.iface} (${c.to.ip}): ${sanitizeLine(c.detail, 'keep')}${c.state === 'failed' ? `  # ${c.reproduce.replace(/\n/g, '; ')}` : ''}`;
}

/** Which matrix ran, when it is not the full one (or verify chose it). */
export function runLogMatrixHead(start: MatrixStart | undefined): string[] {
  const line = formatMatrixStartText(start);
  return line ? [line] : [];
}

/** Under the cells: each rail's count and the failing cells folded by their likely cause. */
export function runLogMatrixSummary(cells: readonly MatrixCell[], inventory?: string): string[] {
  const rails = formatRailsText(cells);
  return [...(rails ? [rails] : []), ...causeGroups(cells).map((g) => `failing ${formatCauseGroupText(g, inventory)}`)];
}

export function runLogEnd(end: RunEnd, matrix: readonly MatrixCell[] = end.cells): string[] {
  const cells =
    matrix.length > 0 ? ` · cells ${matrix.filter((c) => c.state === 'passed').length}/${matrix.length} passed` : '';
  return [
    ...(end.problems ?? []).map((p) => `problem ${p}`),
    ...(end.warnings ?? []).map((w) => `warning ${w}`),
    `# ${end.interrupted ? 'interrupted' : 'finished'} after ${formatDuration(end.durationMs)}: ${formatCounts(end.results)}${cells}`,
  ];
}
