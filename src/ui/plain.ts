/**
 * Plain lines for pipes, logs and CI (stdout not a TTY): one line per host event, then a summary.
 * Status folds hosts that answered the same into one line, ClusterShell-style.
 */
import { foldHosts } from '../inventory/select.js';
import type { CommandName, HostResult, MatrixCell, RunEnd, RunEvents, RunStart } from '../vocabulary.js';
import type { OutStream } from './stream.js';
import { formatCounts, formatDuration, outcomeLine } from './text/format.js';

export interface PlainOptions {
  readonly command: CommandName;
  /** Print every stage as it starts (deploy, rollback); status and verify print results only. */
  readonly stages: boolean;
}

function label(host: { id: number; name: string }): string {
  return `[${host.id} ${host.name}]`;
}

function indent(text: string, prefix = '    | '): string {
  return text
    .trimEnd()
    .split('\n')
    .map((l) => `${prefix}${l}`)
    .join('\n');
}

export function plainHandler(out: OutStream, options: PlainOptions): RunEvents {
  const write = (line: string) => void out.write(`${line}\n`);
  return {
    onRunStart: (e: RunStart) =>
      write(`ibfleet ${e.command}${e.dryRun ? ' --dry-run' : ''}: ${e.hosts.length} host${e.hosts.length === 1 ? '' : 's'} (${foldHosts(e.hosts.map((h) => h.id))})${e.playbook ? ` · playbook ${e.playbook}` : ''} · inventory ${e.inventory} · concurrency ${e.concurrency}`),
    onStage: (host, stage) => {
      if (options.stages) write(`${label(host)} ${stage}`);
    },
    onHostDone: (r) => {
      if (options.command === 'status') return;
      write(`${label(r.host)} ${outcomeLine(r)}`);
      if (r.status === 'planned' || (r.status === 'changed' && options.stages)) for (const reason of r.reasons) write(`    - ${reason}`);
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

export function cellLine(c: MatrixCell): string {
  const mark = c.ok === true ? 'ok  ' : c.ok === false ? 'FAIL' : 'skip';
  return `${mark} ${c.method} ${c.from.host}/${c.from.iface} (${c.from.ip}) → ${c.to.host}/${c.to.iface} (${c.to.ip}): ${c.detail}`;
}

/** Hosts with the same status and reasons become one line: `16,34: ok`. */
export function foldedStatusLines(results: readonly HostResult[]): string[] {
  const groups = new Map<string, { ids: number[]; status: string; reasons: readonly string[] }>();
  for (const r of results) {
    const reasons = r.status === 'unreachable' || r.status === 'failed' ? [r.error?.message ?? ''] : r.reasons;
    const key = `${r.status}\u0000${reasons.join('\u0000')}`;
    const group = groups.get(key) ?? { ids: [], status: r.status, reasons };
    group.ids.push(r.host.id);
    groups.set(key, group);
  }
  const lines: string[] = [];
  for (const g of [...groups.values()].sort((a, b) => Math.min(...a.ids) - Math.min(...b.ids))) {
    if (g.reasons.length <= 1) lines.push(`${foldHosts(g.ids)}: ${g.status}${g.reasons[0] ? `: ${g.reasons[0]}` : ''}`);
    else {
      lines.push(`${foldHosts(g.ids)}: ${g.status}:`);
      for (const reason of g.reasons) lines.push(`    - ${reason}`);
    }
  }
  return lines;
}
