/**
 * Plain lines for pipes, logs and CI (stdout not a TTY): one line per host event, then a summary.
 * Status folds hosts that answered the same into one line, ClusterShell-style. What a host sent
 * back (error messages, output tails) is sanitised like everywhere else, tabs kept: plain output
 * may well be a terminal too.
 */
import type { CommandName, HostResult, MatrixCell, RunEnd, RunEvents, RunStart } from '../vocabulary.js';
import { foldResults } from './text/fold.js';
import { formatCounts, formatDuration, STAGE_NOTES } from './text/format.js';
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
  return {
    onRunStart: (e: RunStart) => write(plainHeaderLine(e)),
    onStage: (host, stage) => {
      if (options.stages) write(`${label(host)} ${STAGE_NOTES[stage] ?? stage}`);
    },
    onHostDone: (r) => {
      if (options.command === 'status') return;
      write(`${label(r.host)} ${outcomeLine(r)}`);
      if (r.status === 'planned' || (r.status === 'changed' && options.stages)) for (const reason of r.reasons) write(`    - ${sanitizeLine(reason, 'keep')}`);
      if (r.error?.stderrTail) write(indent(r.error.stderrTail));
      if (r.planText) {
        write('    script that would run as root on the host:');
        write(indent(r.planText));
      }
    },
    onCell: (cell: MatrixCell) => write(cellLine(cell)),
    onRunEnd: (e: RunEnd) => {
      if (options.command === 'status') for (const line of foldedStatusLines(e.results)) write(line);
      const failedCells = e.cells.filter((c) => c.ok === false);
      for (const c of failedCells) write(`  reproduce ${c.from.name}/${c.from.iface} → ${c.to.name}/${c.to.iface}: ${c.reproduce}`);
      const cells = e.cells.length ? ` · matrix ${e.cells.filter((c) => c.ok === true).length}/${e.cells.length} passed${e.cells.some((c) => c.ok === null) ? `, ${e.cells.filter((c) => c.ok === null).length} skipped` : ''}` : '';
      write(`summary: ${formatCounts(e.results)}${cells} · ${formatDuration(e.durationMs)}${e.interrupted ? ' · interrupted' : ''}`);
    },
  };
}

/** One line saying how a host ended. */
export function outcomeLine(r: HostResult): string {
  const meta = [r.manager, formatDuration(r.durationMs)].filter(Boolean).join(', ');
  switch (r.status) {
    case 'failed':
    case 'unreachable':
      return `${r.status} at ${r.error?.stage ?? 'connect'} (${meta}): ${sanitizeLine(r.error?.message ?? r.reasons[0] ?? '', 'keep')}`;
    case 'drift':
      return `drift (${meta}): ${sanitizeLine(r.reasons.join('; '), 'keep')}`;
    case 'changed':
    case 'planned':
      return `${r.status} (${meta}): ${r.reasons.length} change${r.reasons.length === 1 ? '' : 's'}`;
    default:
      return `${r.status} (${meta})`;
  }
}

export function cellLine(c: MatrixCell): string {
  const mark = c.ok === true ? 'ok  ' : c.ok === false ? 'FAIL' : 'skip';
  return `${mark} ${c.method} ${c.from.host}/${c.from.iface} (${c.from.ip}) → ${c.to.host}/${c.to.iface} (${c.to.ip}): ${sanitizeLine(c.detail, 'keep')}`;
}

/** Hosts with the same status and reasons become one line (`16,34: ok`), what needs attention first. */
export function foldedStatusLines(results: readonly HostResult[]): string[] {
  const groups = foldResults(
    results.map((r) => ({ id: r.host.id, status: r.status, reasons: (r.status === 'unreachable' || r.status === 'failed' ? [r.error?.message ?? ''] : r.reasons).map((reason) => sanitizeLine(reason, 'keep')) })),
  );
  const lines: string[] = [];
  for (const g of groups) {
    if (g.reasons.length <= 1) lines.push(`${g.hostSet}: ${g.status}${g.reasons[0] ? `: ${g.reasons[0]}` : ''}`);
    else {
      lines.push(`${g.hostSet}: ${g.status}:`);
      for (const reason of g.reasons) lines.push(`    - ${reason}`);
    }
  }
  return lines;
}
